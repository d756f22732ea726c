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
    const std::int64_t start = p.call_started_ns.load(std::memory_order_relaxed);
    if (start == 0 || now_ns() - start <= limit_ns) continue;
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
  p.collective.store("harness", std::memory_order_relaxed);
  p.algorithm.store(what, std::memory_order_relaxed);
  p.phase.store("sync", std::memory_order_relaxed);
  p.step.store(0, std::memory_order_relaxed);
  p.call_started_ns.store(now_ns(), std::memory_order_relaxed);
}

WatchedSection::~WatchedSection() { progress().call_started_ns.store(0, std::memory_order_relaxed); }

}  // namespace collscope::program
