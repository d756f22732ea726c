// Traces of calls, computed from the schedules instead of recorded: each rank's
// operations in the order the host executor issues them (the Sequencer), as the time
// model's simulator reads them (model.hpp). No MPI, no buffers: a call at any N can be
// predicted on one machine.
#pragma once

#include <memory>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/model.hpp"

namespace collscope {

// Every rank's trace of one call of a hand-written algorithm: sends, receives, waits,
// reductions and copies (avg's division counts as a reduction: it reads and writes
// every element once); a send is marked from_input when it reads none of the bytes the
// rank wrote earlier in the call (in place: or that the call writes at all, which a
// previous call of a loop wrote just before; MODEL.md, "Where the bytes sit").
std::vector<RankTrace> traces_of(const Algorithm& algo, int nranks, const CollArgs& args,
                                 bool in_place);

// Rank `rank`'s trace, produced step by step as the simulator reads it: a call of
// thousands of ranks holds no whole trace (RankStream::events).
std::unique_ptr<EventSource> schedule_source(const Algorithm& algo, int rank, int nranks,
                                             const CollArgs& args, bool in_place);
// What rank `rank`'s trace moves (the footprint a RankStream needs, and the volume to set
// against the theory), counted from its schedule's steps: the trace has an event for
// each of their messages and local operations and a wait for each message, so the
// order the sequencer gives them is not needed to count them. (collscope_predict checks
// that the traces it simulates move exactly this.)
TraceTotals schedule_totals(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
                            bool in_place);

}  // namespace collscope
