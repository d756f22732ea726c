// The vendor baseline: MPI_Barrier on the communicator's own MPI communicator. Its
// messages are the library's business, so they are neither counted nor predicted.
#include "collscope/barrier.hpp"
#include "collscope/errors.hpp"

namespace collscope {

void barrier_mpi(Comm& comm, const CollArgs&) {
  comm.step("MPI_Barrier", 0);
  const int rc = MPI_Barrier(comm.mpi_comm());
  if (rc != MPI_SUCCESS) throw RuntimeError("MPI_Barrier failed with code " + std::to_string(rc));
}

}  // namespace collscope
