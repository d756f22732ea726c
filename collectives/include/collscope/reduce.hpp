// The reduce family: one function per algorithm (collectives/reduce/*.cpp) and its
// exact theory (collectives/theory/reduce.cpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void reduce_binomial(Comm&, const CollArgs&);
void reduce_mpi(Comm&, const CollArgs&);

RankVolume reduce_binomial_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> reduce_binomial_constraint(int nranks, const CollArgs&);
std::optional<std::string> reduce_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
