// The all-to-all family: one function per algorithm (collectives/alltoall/*.cpp) and
// its exact theory (collectives/theory/alltoall.cpp). `count` is per peer
// (collective.hpp): block j of the send buffer goes to rank j.
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void alltoall_pairwise(Comm&, const CollArgs&);
void alltoall_ring(Comm&, const CollArgs&);
void alltoall_bruck(Comm&, const CollArgs&);
void alltoall_mpi(Comm&, const CollArgs&);

RankVolume alltoall_pairwise_theory(int rank, int nranks, const CollArgs&);
RankVolume alltoall_ring_theory(int rank, int nranks, const CollArgs&);
RankVolume alltoall_bruck_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> alltoall_pairwise_constraint(int nranks, const CollArgs&);
std::optional<std::string> alltoall_ring_constraint(int nranks, const CollArgs&);
std::optional<std::string> alltoall_bruck_constraint(int nranks, const CollArgs&);
std::optional<std::string> alltoall_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
