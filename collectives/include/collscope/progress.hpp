// What this process is doing right now, for the watchdog (--timeout): which collective
// and algorithm, which phase and step, and which peer a wait is blocked on.
// Plain relaxed atomics: the hot path pays a few stores, the watchdog thread reads them.
// A call is marked by a number, not a clock: a clock read costs as much as a few percent
// of an 8-byte call, which a timed loop would count in every call (docs/timing.md); the
// watchdog times a call from when it first sees its number.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace collscope {

struct Progress {
  std::atomic<const char*> collective{""};
  std::atomic<const char*> algorithm{""};
  std::atomic<const char*> phase{""};
  std::atomic<int> step{-1};
  std::atomic<int> wait_peer{-1};       // -1: not inside a wait
  std::atomic<bool> wait_is_recv{false};
  std::atomic<std::uint64_t> calls_begun{0};  // watched calls begun so far
  std::atomic<bool> in_call{false};           // inside a watched call
};

// The process-wide instance (one communicator stack per process).
Progress& progress();

// The start and the end of one watched call (a collective, a harness section, a round
// trip): a few stores, no clock. Only the calling thread writes these fields.
inline void begin_call(Progress& p, const char* collective, const char* algorithm) {
  p.collective.store(collective, std::memory_order_relaxed);
  p.algorithm.store(algorithm, std::memory_order_relaxed);
  p.calls_begun.store(p.calls_begun.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  p.in_call.store(true, std::memory_order_relaxed);
}
inline void end_call(Progress& p) { p.in_call.store(false, std::memory_order_relaxed); }

// The phase and step a call is in (a schedule's step, a vendor call): every executor and
// the vendor baselines report through this one function.
inline void report_step(const char* phase, int index) {
  Progress& p = progress();
  p.phase.store(phase, std::memory_order_relaxed);
  p.step.store(index, std::memory_order_relaxed);
}

// One watched call: begun as (collective, algorithm), `body` run, reported done, ended.
// run_collective and run_p2p are each one of these.
template <class Body>
void watched_call(const char* collective, const char* algorithm, Body&& body) {
  Progress& p = progress();
  begin_call(p, collective, algorithm);
  body();
  report_step("done", 0);
  end_call(p);
}

// What the watchdog may do besides reporting, for a library that works on its own (an
// NCCL communicator): poll its asynchronous error, and abort its work in flight before
// the process exits. Both are called from the watchdog's thread.
class AbortHook {
 public:
  virtual ~AbortHook() = default;
  virtual std::string async_error() = 0;  // "" when there is none
  virtual void abort() = 0;
};
// The hook of this process (nullptr: none). Its owner clears it before it goes away;
// clearing waits for a call of the watchdog's below in progress.
void set_abort_hook(AbortHook* hook);
// The watchdog's calls, under the hook's lock: the hook's asynchronous error ("" when
// none, or no hook), and abort (nothing without a hook).
std::string abort_hook_error();
void abort_through_hook();

// The monotonic clock every process of a machine shares, in nanoseconds.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace collscope
