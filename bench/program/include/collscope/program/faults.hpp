// Fault injection for the tests of the failure paths, from the environment:
//   COLLSCOPE_DEBUG_STALL=rank:seconds   that rank sleeps once, just before its first
//                                        measured call, so its peers wait for it (the
//                                        watchdog's test).
#pragma once

namespace collscope::program {

// Sleeps the first time it is called on the rank COLLSCOPE_DEBUG_STALL names.
void stall_if_asked(int rank);

}  // namespace collscope::program
