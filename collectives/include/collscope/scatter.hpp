// The scatter family: one function per algorithm (collectives/scatter/*.cpp) and its
// exact theory (collectives/theory/scatter.cpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void scatter_linear(Comm&, const CollArgs&);
void scatter_binomial(Comm&, const CollArgs&);
void scatter_mpi(Comm&, const CollArgs&);

RankVolume scatter_linear_theory(int rank, int nranks, const CollArgs&);
RankVolume scatter_binomial_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> scatter_binomial_constraint(int nranks, const CollArgs&);
std::optional<std::string> scatter_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
