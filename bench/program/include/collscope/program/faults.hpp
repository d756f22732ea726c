// Fault injection for the tests of the failure paths and of the comparisons, from the
// environment:
//   COLLSCOPE_DEBUG_STALL=rank:seconds   that rank sleeps once, just before its first
//                                        measured call, so its peers wait for it (the
//                                        watchdog's test).
//   COLLSCOPE_DEBUG_SLOWDOWN=F           every timed call (or timed loop, or graph
//                                        replay) lasts F times as long: the rank waits
//                                        out the difference, yielding its core (F >= 1). A planted slowdown
//                                        of known size, for the tests of the verdicts
//                                        that compare times (scripts/compare, the advisor).
#pragma once

#include <chrono>

namespace collscope::program {

// Sleeps the first time it is called on the rank COLLSCOPE_DEBUG_STALL names.
void stall_if_asked(int rank);

// COLLSCOPE_DEBUG_SLOWDOWN's factor: 1 when unset. Throws UsageError when it is not a
// number from 1 to 1000.
double slowdown_factor();

// With a factor above 1: waits, yielding the core, until (now - t0) reaches factor x what
// it was on entry.
void stretch_since(std::chrono::steady_clock::time_point t0, double factor);

}  // namespace collscope::program
