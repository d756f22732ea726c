// Each collective's algorithm table lives beside its algorithms
// (collectives/<collective>/table.cpp); the registry joins them in this order.
#pragma once

#include <span>

#include "collscope/algorithm.hpp"

namespace collscope {

std::span<const Algorithm> allreduce_algorithms();
std::span<const Algorithm> reduce_scatter_algorithms();
std::span<const Algorithm> allgather_algorithms();
std::span<const Algorithm> broadcast_algorithms();
std::span<const Algorithm> reduce_algorithms();
std::span<const Algorithm> gather_algorithms();
std::span<const Algorithm> scatter_algorithms();
std::span<const Algorithm> alltoall_algorithms();
std::span<const Algorithm> alltoallv_algorithms();
std::span<const Algorithm> barrier_algorithms();

}  // namespace collscope
