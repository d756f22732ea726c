// The all-to-all-v family: one function per algorithm (collectives/alltoallv/*.cpp) and
// its exact theory (collectives/theory/alltoallv.cpp). args.splits is the N x N split
// matrix in elements, row = sender (collective.hpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void alltoallv_pairwise(Comm&, const CollArgs&);
void alltoallv_mpi(Comm&, const CollArgs&);

RankVolume alltoallv_pairwise_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> alltoallv_pairwise_constraint(int nranks, const CollArgs&);
std::optional<std::string> alltoallv_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
