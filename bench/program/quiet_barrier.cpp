#include "collscope/program/quiet_barrier.hpp"

#include <thread>

namespace collscope::program {

void quiet_barrier(MPI_Comm comm, std::chrono::microseconds poll) {
  MPI_Request req;
  MPI_Ibarrier(comm, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace collscope::program
