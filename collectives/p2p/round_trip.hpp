// One round trip between a rank and its peer, the schedule the patterns of pairs share
// (pairs.cpp, rounds.cpp): the payload (the send buffer) goes out, comes back and lands
// in the receive buffer; a 0-byte size is a signal each way.
#pragma once

#include "collscope/p2p.hpp"
#include "collscope/schedule.hpp"

namespace collscope::schedules {

// Step 0: the initiator sends the ping, the peer receives it; step 1: the peer sends it
// back from where it landed, the initiator receives the pong. The steps carry `phase`
// (probe, warmup, timed) for the watchdog.
Steps round_trip(Plan& p, bool initiator, int peer, const char* phase);

// This rank's round trip in a step of pairs, each pair's first rank (a) initiating;
// nothing when it rests.
Steps round_trip_in(Plan& p, const P2pStep& step, const char* phase);

}  // namespace collscope::schedules
