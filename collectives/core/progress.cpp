#include "collscope/progress.hpp"

#include <mutex>

namespace collscope {
namespace {

std::mutex hook_mutex;
AbortHook* the_hook = nullptr;  // guarded by hook_mutex

}  // namespace

Progress& progress() {
  static Progress p;
  return p;
}

void set_abort_hook(AbortHook* hook) {
  std::lock_guard lock(hook_mutex);
  the_hook = hook;
}

std::string abort_hook_error() {
  std::lock_guard lock(hook_mutex);
  return the_hook ? the_hook->async_error() : std::string();
}

void abort_through_hook() {
  std::lock_guard lock(hook_mutex);
  if (the_hook) the_hook->abort();
}

}  // namespace collscope
