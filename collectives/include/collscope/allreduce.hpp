// The allreduce family: one function per algorithm (collectives/allreduce/*.cpp) and
// its exact theory (collectives/theory/allreduce.cpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void allreduce_ring(Comm&, const CollArgs&);
void allreduce_direct(Comm&, const CollArgs&);
void allreduce_tree(Comm&, const CollArgs&);
void allreduce_dbt(Comm&, const CollArgs&);
void allreduce_halving_doubling(Comm&, const CollArgs&);
void allreduce_mpi(Comm&, const CollArgs&);

RankVolume allreduce_ring_theory(int rank, int nranks, const CollArgs&);
RankVolume allreduce_direct_theory(int rank, int nranks, const CollArgs&);
RankVolume allreduce_tree_theory(int rank, int nranks, const CollArgs&);
RankVolume allreduce_dbt_theory(int rank, int nranks, const CollArgs&);
RankVolume allreduce_halving_doubling_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> allreduce_direct_constraint(int nranks, const CollArgs&);
std::optional<std::string> allreduce_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
