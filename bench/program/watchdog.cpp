#include "collscope/program/watchdog.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "collscope/errors.hpp"
#include "collscope/progress.hpp"

namespace collscope::program {
namespace {

std::string describe_wait(const Progress& p) {
  const int peer = p.wait_peer.load(std::memory_order_relaxed);
  if (peer < 0) return "not waiting on a peer (computing, or inside the library)";
  return std::string("waiting to ") + (p.wait_is_recv.load() ? "receive from" : "send to") +
         " rank " + std::to_string(peer);
}

// The call under way, as the watchdog last saw it: its number and since when (this
// thread's clock) it has seen that number.
struct SeenCall {
  bool inside = false;
  std::uint64_t number = 0;
  std::int64_t since_ns = 0;

  // How long the call now under way has been seen under way (0 outside a call).
  std::int64_t stuck_ns(const Progress& p) {
    const bool in = p.in_call.load(std::memory_order_relaxed);
    const std::uint64_t n = p.calls_begun.load(std::memory_order_relaxed);
    const std::int64_t now = now_ns();
    if (!in) {
      inside = false;
      return 0;
    }
    if (!inside || n != number) {
      inside = true;
      number = n;
      since_ns = now;
    }
    return now - since_ns;
  }
};

}  // namespace

Watchdog::Watchdog(double timeout_s, int rank, std::string program)
    : timeout_s_(timeout_s), rank_(rank), program_(std::move(program)) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::loop() {
  const auto limit_ns = static_cast<std::int64_t>(timeout_s_ * 1e9);
  SeenCall seen;
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // A library working on its own (NCCL) fails without returning: its error is polled.
    if (const std::string error = abort_hook_error(); !error.empty()) {
      std::fprintf(stderr, "%s: error: rank %d: %s\n", program_.c_str(), rank_, error.c_str());
      std::fflush(stderr);
      abort_through_hook();
      _exit(kExitRuntime);
    }
    const Progress& p = progress();
    if (seen.stuck_ns(p) <= limit_ns) continue;
    std::fprintf(stderr,
                 "%s: timeout: rank %d stuck for more than %.1f s in %s/%s, phase %s step %d, %s\n",
                 program_.c_str(), rank_, timeout_s_, p.collective.load(), p.algorithm.load(),
                 p.phase.load(), p.step.load(), describe_wait(p).c_str());
    std::fflush(stderr);
    abort_through_hook();  // NCCL's kernels in flight would outlive the process otherwise
    _exit(kExitRuntime);   // MPI is blocked in another thread: no clean way out
  }
}

WatchedSection::WatchedSection(const char* what) {
  Progress& p = progress();
  begin_call(p, "harness", what);
  p.phase.store("sync", std::memory_order_relaxed);
  p.step.store(0, std::memory_order_relaxed);
}

WatchedSection::~WatchedSection() { end_call(progress()); }

}  // namespace collscope::program
