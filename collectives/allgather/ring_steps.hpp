// The ring allgather's steps, shared by allgather_ring and by the broadcast that ends
// with a ring allgather (broadcast/scatter_allgather.cpp).
#pragma once

#include "collscope/schedule.hpp"

namespace collscope::detail {

// N-1 steps numbered first_step.. over the receive buffer, which ends with every block:
// rank r sends block r-k and receives block r-k-1 in step first_step + k. Its own block
// is read from `own` (the send buffer, or its place in the receive buffer) in the first
// step and copied into place there while the first block travels.
Steps ring_allgather_steps(Plan& p, BufRef own, std::uint32_t tag, int first_step);

}  // namespace collscope::detail
