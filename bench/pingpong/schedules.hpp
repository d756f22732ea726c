// pingpong's schedules: pure, no communication. Each is one call of the executor over the
// payload (the send buffer) and the landing buffer (the receive buffer); a 0-byte size is
// a signal each way. The steps carry the measurement's phase (probe, warmup, timed) for
// the watchdog.
#pragma once

#include <cstddef>

#include "collscope/schedule.hpp"

namespace collscope::bench::pingpong {

// The plan of one call that moves the payload: bytes as uint8 elements.
Plan payload_plan(int rank, int nranks, std::size_t bytes);

// One round trip. Step 0: the initiator sends the ping, the peer receives it; step 1: the
// peer sends it back from where it landed, the initiator receives the pong.
Steps round_trip_steps(Plan& p, bool initiator, int peer, const char* phase);

// Shift k of the ring: one step in which the rank sends the message to `to` (r+k) and
// receives one from `from` (r-k); at k = N/2 both are the same rank.
Steps ring_step_steps(Plan& p, int to, int from, const char* phase);

}  // namespace collscope::bench::pingpong
