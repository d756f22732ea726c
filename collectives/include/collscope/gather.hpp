// The gather family: one function per algorithm (collectives/gather/*.cpp) and its
// exact theory (collectives/theory/gather.cpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void gather_linear(Comm&, const CollArgs&);
void gather_binomial(Comm&, const CollArgs&);
void gather_mpi(Comm&, const CollArgs&);

RankVolume gather_linear_theory(int rank, int nranks, const CollArgs&);
RankVolume gather_binomial_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> gather_binomial_constraint(int nranks, const CollArgs&);
std::optional<std::string> gather_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
