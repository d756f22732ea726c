#include "collscope/progress.hpp"

namespace collscope {
namespace {

std::atomic<AbortHook*> the_hook{nullptr};

}  // namespace

Progress& progress() {
  static Progress p;
  return p;
}

void set_abort_hook(AbortHook* hook) { the_hook.store(hook, std::memory_order_release); }
AbortHook* abort_hook() { return the_hook.load(std::memory_order_acquire); }

}  // namespace collscope
