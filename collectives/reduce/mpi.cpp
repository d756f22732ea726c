// The vendor baseline: MPI_Reduce on the communicator's own MPI communicator, with
// MPI_IN_PLACE at the root when the call is in place (never elsewhere: only the root
// has a receive buffer). Its bytes are neither counted nor predicted.
#include "collscope/mpi_types.hpp"
#include "collscope/reduce.hpp"

namespace collscope {

std::optional<std::string> reduce_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void reduce_mpi(Comm& comm, const CollArgs& a) {
  comm.step("MPI_Reduce", 0);
  const bool root = comm.rank() == a.root;
  const void* send = root && a.in_place() ? MPI_IN_PLACE : a.sendbuf;
  void* recv = root ? a.recvbuf : nullptr;
  const int rc = MPI_Reduce(send, recv, static_cast<int>(a.count), mpi_datatype(a.dtype),
                            mpi_op(a.op, a.dtype), a.root, comm.mpi_comm());
  check_mpi(rc, "MPI_Reduce");
}

}  // namespace collscope
