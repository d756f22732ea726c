// A barrier that sleeps while it waits (MPI_Ibarrier, then MPI_Test every `poll`), so
// the ranks that wait take no CPU from the ones being timed on an oversubscribed node.
#pragma once

#include <mpi.h>

#include <chrono>

namespace collscope::program {

void quiet_barrier(MPI_Comm comm, std::chrono::microseconds poll);

}  // namespace collscope::program
