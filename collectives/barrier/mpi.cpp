// The vendor baseline: MPI_Barrier on the communicator's own MPI communicator. Its
// messages are the library's business, so they are neither counted nor predicted.
#include "collscope/barrier.hpp"
#include "collscope/mpi_types.hpp"

namespace collscope {

void barrier_mpi(Comm& comm, const CollArgs&) {
  comm.step("MPI_Barrier", 0);
  const int rc = MPI_Barrier(comm.mpi_comm());
  check_mpi(rc, "MPI_Barrier");
}

}  // namespace collscope
