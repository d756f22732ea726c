// What this process is doing right now, for the watchdog (--timeout): which collective
// and algorithm, which phase and step, and which peer a wait is blocked on.
// Plain relaxed atomics: the hot path pays a few stores, the watchdog thread reads them.
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
  std::atomic<std::int64_t> call_started_ns{0};  // 0: not inside a collective call
};

// The process-wide instance (one communicator stack per process).
Progress& progress();

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
