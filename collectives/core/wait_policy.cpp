#include "collscope/wait_policy.hpp"

#include <sched.h>

#include <atomic>

#include "collscope/enum_names.hpp"

namespace collscope {
namespace {

std::atomic<WaitPolicy> g_policy{WaitPolicy::spin};
constexpr std::string_view kWaitPolicyNames[] = {"spin", "yield", "block"};  // in the enum's order

}  // namespace

std::string_view wait_policy_name(WaitPolicy p) { return name_of(p, kWaitPolicyNames); }
std::optional<WaitPolicy> parse_wait_policy(std::string_view s) { return by_name<WaitPolicy>(s, kWaitPolicyNames); }

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
