// The recursive doubling's steps, shared by allgather_recursive_doubling and by the
// allreduce that ends with it (allreduce/halving_doubling.cpp).
#pragma once

#include <cstdint>

#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/schedule.hpp"

namespace collscope::detail {

// log2 p steps numbered first_step.. over the receive buffer, which holds virtual block
// `vrank` (of the cut `blocks`) at the start and the whole vector at the end: at
// distance d = 1, 2, ..., p/2 the rank sends everything it holds to v^d and receives
// v^d's range of the same number of blocks beside it.
Steps doubling_steps(Plan& p, int vrank, patterns::HdBlocks blocks, std::uint32_t tag,
                     int first_step);

}  // namespace collscope::detail
