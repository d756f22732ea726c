// The NCCL executor (collectives/nccl/nccl_executor.cpp) on the emulated device, against
// a stand-in NCCL library that writes down each call and delivers a group's receives at
// its ncclGroupEnd (it fills their buffers): a step's messages are one ncclGroupStart /
// ncclGroupEnd of ncclSend and ncclRecv on the resolved buffers, signals are messages of
// no bytes from a buffer that is not null, empty steps issue nothing, local ops run after
// the step's group, every message is counted (the sink: executor_sink.hpp), and a failing
// NCCL call throws. Needs neither NCCL nor a GPU; NCCL moving the bytes between ranks is
// left to a GPU node.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "../device/runtimes.hpp"
#include "../nccl/nccl_executor_impl.hpp"
#include "collscope/errors.hpp"

namespace collscope {
namespace {

constexpr std::byte kDelivered{0x5a};

// What the stand-in library was asked, in order, and where the call's buffers are.
struct Log {
  std::vector<std::string> calls;
  const std::byte* send = nullptr;
  const std::byte* recv = nullptr;
  std::size_t bytes = 0;
  std::vector<std::pair<std::byte*, std::size_t>> arriving;  // the group's receives
  ncclResult_t group_end = ncclSuccess;

  std::string where(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    if (!b) return "null";
    if (b >= send && b < send + bytes) return "send+" + std::to_string(b - send);
    if (b >= recv && b < recv + bytes) return "recv+" + std::to_string(b - recv);
    return "elsewhere";
  }
};
Log the_log;

ncclResult_t group_start() {
  the_log.calls.push_back("GroupStart");
  return ncclSuccess;
}
ncclResult_t group_end() {
  the_log.calls.push_back("GroupEnd");
  for (const auto& [p, n] : the_log.arriving) std::fill_n(p, n, kDelivered);
  the_log.arriving.clear();
  return the_log.group_end;
}
ncclResult_t send(const void* p, size_t n, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
  the_log.calls.push_back("Send " + the_log.where(p) + " " + std::to_string(n) + " to " +
                          std::to_string(peer));
  return ncclSuccess;
}
ncclResult_t recv(void* p, size_t n, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
  the_log.calls.push_back("Recv " + the_log.where(p) + " " + std::to_string(n) + " from " +
                          std::to_string(peer));
  the_log.arriving.emplace_back(static_cast<std::byte*>(p), n);
  return ncclSuccess;
}
ncclResult_t comm_destroy(ncclComm_t) { return ncclSuccess; }
const char* error_string(ncclResult_t) { return "stand-in failure"; }

nccl::Library stand_in() {
  return nccl::Library{.version = 22809, .path = {}, .GetErrorString = error_string,
                       .CommDestroy = comm_destroy, .GroupStart = group_start,
                       .GroupEnd = group_end, .Send = send, .Recv = recv};
}

// Rank 0 of 2: an exchange whose received block is then copied, an empty step, and a
// step of signals.
Steps exchange_then_signal(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  s.send(1, Plan::send(0), 16, tag).recv(1, Plan::recv(16), 16, tag).copy(Plan::recv(0), Plan::recv(16), 16);
  co_yield s.step("swap", 0);
  co_yield s.step("nothing", 1);
  co_yield s.signal(1, tag).wait_signal(1, tag).step("sync", 2);
}

class NcclExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    the_log = Log{};
    the_log.send = send_.get();
    the_log.recv = recv_.get();
    the_log.bytes = 32;
  }
  void run() {
    CollArgs a;
    a.count = 8;  // floats
    Plan plan(0, 2, a, {});
    Steps steps = exchange_then_signal(plan);
    ex_.run(plan, steps, {send_.get(), recv_.get()}, 1);
  }

  std::unique_ptr<device::Runtime> rt_ = device::make_emulated_runtime();
  nccl::Library lib_ = stand_in();
  NcclExecutor ex_{*rt_, lib_, nullptr, 0, 2};
  device::Buffer send_{*rt_, 32}, recv_{*rt_, 32};
};

TEST_F(NcclExecutorTest, EachStepsMessagesAreOneGroupAndItsLocalOpsFollow) {
  run();
  ex_.synchronize();
  EXPECT_EQ(the_log.calls,
            (std::vector<std::string>{"GroupStart", "Send send+0 16 to 1", "Recv recv+16 16 from 1",
                                      "GroupEnd", "GroupStart", "Send elsewhere 0 to 1",
                                      "Recv elsewhere 0 from 1", "GroupEnd"}));
  // The copy ran after the receive, from the resolved buffer.
  EXPECT_TRUE(std::all_of(recv_.get(), recv_.get() + 16, [](std::byte b) { return b == kDelivered; }));
  const RankVolume v = ex_.traffic().per_peer()[1];
  EXPECT_EQ(v.sent_bytes, 16u);
  EXPECT_EQ(v.sent_msgs, 2u);  // the data message and the signal
  EXPECT_EQ(v.recv_bytes, 16u);
  EXPECT_EQ(v.recv_msgs, 2u);
}

TEST_F(NcclExecutorTest, AFailedGroupThrowsNamingTheCall) {
  the_log.group_end = ncclInternalError;
  try {
    run();
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "nccl: ncclGroupEnd: stand-in failure");
  }
}

}  // namespace
}  // namespace collscope
