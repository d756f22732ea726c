// Which node every rank is on, as MPI_COMM_TYPE_SHARED sees it (ranks that can share
// memory), numbered 0.. in order of each node's lowest rank. Collective over `comm`.
#pragma once

#include <mpi.h>

#include <vector>

namespace collscope::program {

std::vector<int> node_of_rank(MPI_Comm comm);

}  // namespace collscope::program
