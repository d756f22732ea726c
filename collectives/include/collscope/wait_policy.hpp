// How the host waits where it must: for a GPU stream to reach a point, for an event, for a
// transport request of a device path. Never a sleep in the hot path by default.
//
//   spin   poll as fast as it can (cudaEventQuery, MPI_Test, ucp_worker_progress): the
//          lowest latency, a core per rank; the default
//   yield  poll, and give the core away between polls (sched_yield): for nodes with more
//          ranks than cores
//   block  let the library sleep (blocking-sync events, MPI_Wait): the fewest cycles, a
//          wake-up's latency per wait
//
// One setting per process (--wait), recorded in every row.
#pragma once

#include <optional>
#include <string_view>

namespace collscope {

enum class WaitPolicy { spin, yield, block };

std::string_view wait_policy_name(WaitPolicy p);
std::optional<WaitPolicy> parse_wait_policy(std::string_view s);

// The process's policy (spin until set).
WaitPolicy wait_policy();
void set_wait_policy(WaitPolicy p);

// One pause between two polls: nothing (spin: a CPU relax hint) or sched_yield (yield and
// block: a poll loop under block is one the library cannot sleep in).
void pause_between_polls(WaitPolicy p);

// Polls `done()` until it returns true, pausing by the process's policy between polls.
template <class Done>
void poll_until(Done&& done) {
  const WaitPolicy p = wait_policy();
  while (!done()) pause_between_polls(p);
}

}  // namespace collscope
