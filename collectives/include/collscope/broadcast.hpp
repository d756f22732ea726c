// The broadcast family: one function per algorithm (collectives/broadcast/*.cpp) and
// its exact theory (collectives/theory/broadcast.cpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void broadcast_binomial(Comm&, const CollArgs&);
void broadcast_chain(Comm&, const CollArgs&);
void broadcast_scatter_allgather(Comm&, const CollArgs&);
void broadcast_mpi(Comm&, const CollArgs&);

RankVolume broadcast_binomial_theory(int rank, int nranks, const CollArgs&);
RankVolume broadcast_chain_theory(int rank, int nranks, const CollArgs&);
RankVolume broadcast_scatter_allgather_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> broadcast_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
