// Thousands of small collectives back to back, with no barrier between them, over the
// transport under test: if a message of one call ever matched a receive of another
// (a tag or sequence-number bug, or a transport that delivers late), some result would
// be wrong. Every call's input depends on the call's index, so each result is unique.
// Afterwards no request may be left: not in the transport, not inside UCX.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/host_executor.hpp"
#include "collscope/collective.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/verify/collective_data.hpp"
#include "test_transport.hpp"

namespace collscope {
namespace {

constexpr int kCalls = 3000;

// Algorithms with different message patterns, cycled call by call.
const char* const kMix[][2] = {{"allreduce", "ring"},      {"allreduce", "dbt"},
                               {"alltoall", "bruck"},      {"allgather", "recursive_doubling"},
                               {"broadcast", "binomial"},  {"barrier", "dissemination"},
                               {"reduce_scatter", "halving"}};

TEST(BackToBack, ThousandsOfSmallCallsNeverCross) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm vendor;
  MPI_Comm_dup(MPI_COMM_WORLD, &vendor);
  long long wrong = 0, leaked = 0;
  {
    const auto transport = make_transport(test::transport(), MPI_COMM_WORLD);
    HostExecutor executor(*transport);
    Comm comm(executor, vendor);
    for (int call = 0; call < kCalls; ++call) {
      const auto& [coll, name] = kMix[call % std::size(kMix)];
      const Algorithm& algo = *find_algorithm(coll, name);
      const CollectiveInfo& info = algo.info();
      CollArgs a;
      a.count = 1 + static_cast<std::size_t>(call % 7);
      a.root = call % n;
      a.dtype = DataType::int32;
      a.segment_bytes = 4;  // several segments even for tiny calls
      verify::CallBuffers buffers(info, a, false, rank, n);
      const verify::DataSpec ds =
          verify::data_spec_for(info, static_cast<std::uint64_t>(call), a.dtype, a.op, n);
      verify::fill_collective_input(info, a, ds, rank);
      run_collective(comm, algo, a);
      std::vector<std::byte> want(buffers.recv_count() * a.elem_size() + 1);
      verify::fill_collective_expected(info, want.data(), a, ds, rank);
      wrong += static_cast<long long>(
          verify::compare(a.recvbuf, want.data(), buffers.recv_count(), a.dtype).wrong);
    }
    leaked = open_requests(*transport);
  }
  long long totals[2] = {wrong, leaked}, sums[2] = {0, 0};
  MPI_Allreduce(totals, sums, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_free(&vendor);
  EXPECT_EQ(sums[0], 0) << "wrong elements over " << kCalls << " calls on "
                        << transport_name(test::transport());
  EXPECT_EQ(sums[1], 0) << "requests left open";
}

// The sequence number itself: rank 1 posts its receive for call 6 before the one for
// call 5, rank 0 sends call 5's message first. Only a transport that matches on the
// sequence number delivers each payload to its own call (without it, matching in
// arrival order would swap them).
TEST(BackToBack, SequenceNumbersKeepCallsApart) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const auto transport = make_transport(test::transport(), MPI_COMM_WORLD);
  std::int32_t payload[2] = {5, 6}, got[2] = {0, 0};
  if (rank == 0) {
    Request r[2] = {transport->isend(1, &payload[0], 4, MemoryKind::host, Tag{5, 1}),
                    transport->isend(1, &payload[1], 4, MemoryKind::host, Tag{6, 1})};
    transport->wait_all(r);
  } else if (rank == 1) {
    Request r[2] = {transport->irecv(0, &got[1], 4, MemoryKind::host, Tag{6, 1}),
                    transport->irecv(0, &got[0], 4, MemoryKind::host, Tag{5, 1})};
    transport->wait_all(r);
  }
  transport->quiesce();
  if (rank == 1) {
    EXPECT_EQ(got[0], 5) << "call 5 received call " << got[0] << "'s message";
    EXPECT_EQ(got[1], 6) << "call 6 received call " << got[1] << "'s message";
  }
  int failed = ::testing::Test::HasFailure() ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(any, 0);
}

}  // namespace
}  // namespace collscope
