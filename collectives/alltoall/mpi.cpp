// The vendor baseline: MPI_Alltoall on the communicator's own MPI communicator. Its
// schedule is the library's business, so its bytes are neither counted nor predicted.
// Limits: MPI's int count (count is per peer, as MPI's sendcount).
#include "collscope/alltoall.hpp"
#include "collscope/mpi_types.hpp"

namespace collscope {

std::optional<std::string> alltoall_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void alltoall_mpi(Comm& comm, const CollArgs& a) {
  comm.step("MPI_Alltoall", 0);
  const void* send = a.in_place() ? MPI_IN_PLACE : a.sendbuf;
  const int count = static_cast<int>(a.count);
  const MPI_Datatype type = mpi_datatype(a.dtype);
  const int rc = MPI_Alltoall(send, count, type, a.recvbuf, count, type, comm.mpi_comm());
  check_mpi(rc, "MPI_Alltoall");
}

}  // namespace collscope
