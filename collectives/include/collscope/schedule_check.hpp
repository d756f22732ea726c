// Pure checks of one call's schedules on every rank, without any communication (the
// schedule tests run them for every algorithm, N = 1..16, every test count, and for every
// step of every point-to-point pattern):
//
//   matching   every send has a receive on its peer in the same step, with the same
//              bytes and tag, in the same order (and every signal a wait_signal);
//   bounds     every reference lies inside its buffer: the call's send and receive
//              buffers as the collective lays them out, or the scratch it declared;
//   hazards    nothing may be written by two operations that can run at the same
//              time: a step's receives are pairwise disjoint and disjoint from its
//              sends; its local ops write nothing its sends read; a local op's output
//              is exactly one of its inputs or apart from both;
//   overlap    a step that lets its local ops overlap the next step: they touch no
//              byte the next step receives into;
//   consumed   received bytes that a reduce of the same step consumes
//              (consumed_receives.hpp) are not read again until something overwrites
//              them: the ipc path may reduce straight from the sender's memory and never
//              copy them;
//   volume     the planned volume (the schedule's messages per peer) equals the
//              closed-form theory, per peer, byte for byte and message for message.
#pragma once

#include <optional>
#include <string>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/runtime/p2p.hpp"

namespace collscope {

// The first problem found, as one line naming the rank, step and operation, or nullopt.
std::optional<std::string> check_schedules(const Algorithm& algo, int nranks,
                                           const CollArgs& args, bool in_place);
// The same checks of one step of a point-to-point pattern: every rank's schedule over
// `bytes` of payload, its volume against the step's theory (runtime/p2p.hpp).
std::optional<std::string> check_p2p_step(const P2pEntry& e, const P2pStep& step, int nranks,
                                          std::size_t bytes);

}  // namespace collscope
