// The barrier family: one function per algorithm (collectives/barrier/*.cpp) and its
// exact theory (collectives/theory/barrier.cpp). A barrier has no buffers: its volume
// is zero-byte notifications only.
#pragma once

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

void barrier_dissemination(Comm&, const CollArgs&);
void barrier_mpi(Comm&, const CollArgs&);

RankVolume barrier_dissemination_theory(int rank, int nranks, const CollArgs&);

}  // namespace collscope
