// The allgather family: one function per algorithm (collectives/allgather/*.cpp) and its
// exact theory (collectives/theory/allgather.cpp). Rank r contributes block r of the
// `count`-element vector and every rank receives the whole vector (collective.hpp).
//
// allgather_ring may run inside another collective's call (broadcast by scatter +
// allgather calls it in place): it never calls begin_call and uses local tag 1 only.
// All allgather algorithms use tag 1 only, so a caller may use the other tags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

inline constexpr std::uint32_t kAllgatherTag = 1;

void allgather_ring(Comm&, const CollArgs&);
void allgather_recursive_doubling(Comm&, const CollArgs&);
void allgather_bruck(Comm&, const CollArgs&);
void allgather_mpi(Comm&, const CollArgs&);

RankVolume allgather_ring_theory(int rank, int nranks, const CollArgs&);
RankVolume allgather_recursive_doubling_theory(int rank, int nranks, const CollArgs&);
RankVolume allgather_bruck_theory(int rank, int nranks, const CollArgs&);

std::optional<std::string> allgather_bruck_constraint(int nranks, const CollArgs&);
std::optional<std::string> allgather_mpi_constraint(int nranks, const CollArgs&);

}  // namespace collscope
