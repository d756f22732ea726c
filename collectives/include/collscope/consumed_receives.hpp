// Receives that a reduction consumes at once.
//
// A receive of step s is *consumed* when
//   - it lands in scratch (never in the caller's buffers, which the caller reads after),
//   - a reduce among s's local ops reads exactly its bytes as one operand and writes
//     elsewhere,
//   - no local op of s before that reduce touches those bytes.
// A path that can read the sender's memory (ipc) may then run that reduce straight on
// the sender's bytes and skip the copy into scratch. That is only right if nothing reads
// the received bytes after the reduce; schedule_check.hpp holds every schedule to it
// (until the bytes are overwritten, nothing reads them again).
//
// Pure: the executor and the planned copy volume call the same function.
#pragma once

#include <cstdint>
#include <vector>

#include "collscope/schedule.hpp"

namespace collscope {

// For each of s.comm's ops, whether it is a consumed receive; `consumer[i]` is then the
// index in s.local of the reduce that consumes it (-1 otherwise).
void consumed_receives(const Plan& plan, const Step& s, std::vector<int>& consumer);

}  // namespace collscope
