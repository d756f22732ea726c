#include "collscope/wait_policy.hpp"

#include <sched.h>

#include <atomic>

namespace collscope {
namespace {

std::atomic<WaitPolicy> g_policy{WaitPolicy::spin};

}  // namespace

std::string_view wait_policy_name(WaitPolicy p) {
  switch (p) {
    case WaitPolicy::spin: return "spin";
    case WaitPolicy::yield: return "yield";
    case WaitPolicy::block: return "block";
  }
  return "?";
}

std::optional<WaitPolicy> parse_wait_policy(std::string_view s) {
  for (WaitPolicy p : {WaitPolicy::spin, WaitPolicy::yield, WaitPolicy::block})
    if (s == wait_policy_name(p)) return p;
  return std::nullopt;
}

WaitPolicy wait_policy() { return g_policy.load(std::memory_order_relaxed); }
void set_wait_policy(WaitPolicy p) { g_policy.store(p, std::memory_order_relaxed); }

void pause_between_polls(WaitPolicy p) {
  if (p == WaitPolicy::spin) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  sched_yield();
}

}  // namespace collscope
