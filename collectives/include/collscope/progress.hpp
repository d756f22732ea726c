// What this process is doing right now, for the watchdog (--timeout): which collective
// and algorithm, which phase and step, and which peer a wait is blocked on.
// Plain relaxed atomics: the hot path pays a few stores, the watchdog thread reads them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

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

// The monotonic clock every process of a machine shares, in nanoseconds.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace collscope
