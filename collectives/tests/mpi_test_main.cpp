// main() for GoogleTest binaries launched by mpiexec: MPI set up around the tests, and
// only rank 0 prints (every assertion is made on values reduced over all ranks, so
// every rank sees the same outcome and rank 0's report is the whole report).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "test_transport.hpp"

namespace collscope::test {

TransportKind& transport() {
  static TransportKind kind = TransportKind::mpi;
  return kind;
}

}  // namespace collscope::test

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i)  // what GoogleTest left: our own flags
    if (std::strncmp(argv[i], "--transport=", 12) == 0) {
      const auto kind = collscope::transport_kind(argv[i] + 12);
      if (!kind) {
        std::fprintf(stderr, "error: unknown %s (expected mpi, ucx or nccl)\n", argv[i]);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      collscope::test::transport() = *kind;
    }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
