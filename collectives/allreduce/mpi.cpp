// The vendor baseline: MPI_Allreduce on the communicator's own MPI communicator. Its
// schedule is the library's business, so its bytes are neither counted nor predicted.
#include "collscope/allreduce.hpp"
#include "collscope/mpi_types.hpp"

namespace collscope {

std::optional<std::string> allreduce_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void allreduce_mpi(Comm& comm, const CollArgs& a) {
  comm.step("MPI_Allreduce", 0);
  const void* send = a.in_place() ? MPI_IN_PLACE : a.sendbuf;
  const int rc = MPI_Allreduce(send, a.recvbuf, static_cast<int>(a.count),
                               mpi_datatype(a.dtype), mpi_op(a.op, a.dtype), comm.mpi_comm());
  check_mpi(rc, "MPI_Allreduce");
}

}  // namespace collscope
