// The reduce-scatter family: one function per algorithm (collectives/reduce_scatter/*.cpp)
// and its exact theory (collectives/theory/reduce_scatter.cpp). The vector of `count`
// elements is reduced across ranks and rank r keeps block r of it (collective.hpp).
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void reduce_scatter_ring(Comm&, const CollArgs&);
void reduce_scatter_halving(Comm&, const CollArgs&);
void reduce_scatter_mpi(Comm&, const CollArgs&);

RankVolume reduce_scatter_ring_theory(int rank, int nranks, const CollArgs&);
RankVolume reduce_scatter_halving_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> reduce_scatter_halving_constraint(int nranks, const CollArgs&);
std::optional<std::string> reduce_scatter_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
