// The vendor baseline: MPI_Bcast on the communicator's own MPI communicator, from the
// root's receive buffer (the root first copies its send buffer there when out of place).
// Its schedule is the library's business, so its bytes are neither counted nor predicted.
#include "collscope/broadcast.hpp"
#include "collscope/mpi_types.hpp"

namespace collscope {

std::optional<std::string> broadcast_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void broadcast_mpi(Comm& comm, const CollArgs& a) {
  comm.step("MPI_Bcast", 0);
  if (comm.rank() == a.root && !a.in_place())
    comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
  const int rc = MPI_Bcast(a.recvbuf, static_cast<int>(a.count), mpi_datatype(a.dtype), a.root,
                           comm.mpi_comm());
  check_mpi(rc, "MPI_Bcast");
}

}  // namespace collscope
