// The watchdog's view of a library that works on its own (collscope/progress.hpp): the
// hook's error and abort reach it while it is set, nothing after its owner cleared it,
// and clearing waits for a call in progress.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "collscope/progress.hpp"

namespace collscope {
namespace {

class FakeLibrary final : public AbortHook {
 public:
  std::string async_error() override { return error; }
  void abort() override {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(abort_ms));
    ++aborts;
  }
  std::string error;
  int abort_ms = 0;
  std::atomic<int> aborts{0};
  std::atomic<bool> started{false};
};

TEST(AbortHook, ReachesTheLibraryOnlyWhileSet) {
  FakeLibrary lib;
  EXPECT_EQ(abort_hook_error(), "");
  abort_through_hook();  // no hook: nothing happens
  set_abort_hook(&lib);
  EXPECT_EQ(abort_hook_error(), "");
  lib.error = "unhandled cuda error";
  EXPECT_EQ(abort_hook_error(), "unhandled cuda error");
  abort_through_hook();
  EXPECT_EQ(lib.aborts, 1);
  set_abort_hook(nullptr);
  EXPECT_EQ(abort_hook_error(), "");
  abort_through_hook();
  EXPECT_EQ(lib.aborts, 1);
}

TEST(AbortHook, ClearingWaitsForAnAbortInProgress) {
  FakeLibrary lib;
  lib.abort_ms = 100;
  set_abort_hook(&lib);
  std::thread watchdog([] { abort_through_hook(); });
  while (!lib.started) std::this_thread::yield();
  set_abort_hook(nullptr);  // the owner going away must not pull the hook from under it
  EXPECT_EQ(lib.aborts, 1);
  watchdog.join();
}

}  // namespace
}  // namespace collscope
