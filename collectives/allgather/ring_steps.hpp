// The ring allgather's steps, shared by allgather_ring, by the broadcast that ends with a
// ring allgather (broadcast/scatter_allgather.cpp) and by the allreduce that ends with
// one (allreduce/ring.cpp).
#pragma once

#include <cstdint>

#include "collscope/schedule.hpp"

namespace collscope::detail {

// N-1 steps numbered first_step.. over the receive buffer, which ends with every block:
// a rank that starts with block `owned` (r; r+1 after the allreduce's reduce-scatter)
// sends block owned-k and receives block owned-k-1 in step first_step + k. Its own block
// is read from `own` (the send buffer, or its place in the receive buffer) in the first
// step and copied into place there while the first block travels.
Steps ring_allgather_steps(Plan& p, int owned, BufRef own, std::uint32_t tag, int first_step,
                           const char* phase = "allgather ring");

}  // namespace collscope::detail
