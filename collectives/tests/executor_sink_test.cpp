// The one sink every executor issues through (collscope/executor_sink.hpp), on a stand-in
// executor that writes down what it is handed: the scratch bound once, at the first
// step; each step reported; each message counted, resolved and tagged; the NCCL
// executor's order (issue_whole_steps: a step's messages between begin_step and
// end_step, its local ops after); and a replay's way in (enter_step, a recorded call).
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "collscope/executor_sink.hpp"
#include "collscope/sequencer.hpp"
#include "test_steps.hpp"

namespace collscope {
namespace {

using test::plan_of;

using Words = std::vector<std::string>;

// Each thing the sink hands over as a short word: "bind 16" (the scratch sizes),
// "begin ring0", "end", "send1 send+0 tag 9.1" (kind, peer, where, the tag's call and
// local parts; "-" where a signal has no buffer), "wait@0", "reduce/4" (nranks).
class WordExecutor {
 public:
  using Handle = int;
  Words words;

  Traffic& traffic() { return traffic_; }
  std::byte* address(BufRef ref) const { return table_.address(ref); }
  void bind(std::span<const std::size_t> sizes, CallBuffers b) {
    std::string w = "bind";
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      table_.set_scratch(s, scratch_.data());
      w += ' ';
      w += std::to_string(sizes[s]);
    }
    table_.set_call(b);
    words.push_back(w);
  }
  void begin_step(const Plan&, const Step& s) {
    words.push_back(std::string("begin ") + s.phase + std::to_string(s.index));
  }
  void end_step(const Plan&, const Step&) { words.push_back("end"); }
  int post_recv(const CommOp& op, std::byte* into, Tag tag) { return post(op, into, tag); }
  int post_send(const CommOp& op, const std::byte* from, Tag tag) { return post(op, from, tag); }
  void wait(int& h) { words.push_back("wait@" + std::to_string(h)); }
  void local(const LocalOp& op, const CollArgs&, int nranks) {
    static const char* names[] = {"reduce", "copy", "divide"};
    std::string w = names[static_cast<int>(op.kind)];
    w += '/';
    words.push_back(w + std::to_string(nranks));
  }

  std::array<std::byte, 256> send{}, recv{};

 private:
  int post(const CommOp& op, const std::byte* at, Tag tag) {
    static const char* kinds[] = {"send", "recv", "signal", "wait_signal"};
    const std::string kind = kinds[static_cast<int>(op.kind)];
    words.push_back(kind + std::to_string(op.peer) + " " + where(at) + " tag " + std::to_string(tag.seq) +
                    "." + std::to_string(tag.local));
    return posted_++;
  }
  std::string where(const std::byte* p) const {
    if (!p) return "-";
    const auto in = [p](const auto& a) { return p >= a.data() && p < a.data() + a.size(); };
    if (in(send)) return "send+" + std::to_string(p - send.data());
    if (in(recv)) return "recv+" + std::to_string(p - recv.data());
    return "scratch+" + std::to_string(p - scratch_.data());
  }

  Traffic traffic_{4};
  BufferTable table_;
  std::array<std::byte, 256> scratch_{};
  int posted_ = 0;
};

// A ring step, an empty step, and a step of signals.
Steps three_steps(Plan& p) {
  const BufRef box = p.scratch(16);
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  co_yield test::ring_ops(s, box, tag).step("ring", 0);
  co_yield s.step("nothing", 1);
  co_yield s.signal(2, tag).wait_signal(2, tag).step("sync", 2);
}

TEST(ExecutorSink, WholeStepsGroupEachStepsMessagesAndRunItsLocalOpsAfter) {
  Plan p = plan_of();
  Steps steps = three_steps(p);
  WordExecutor ex;
  ExecutorSink<WordExecutor> sink{ex, p, {ex.send.data(), ex.recv.data()}, 9};
  issue_whole_steps(p, steps, sink);
  EXPECT_EQ(ex.words, (Words{"bind 16", "begin ring0", "send1 send+0 tag 9.1", "recv3 scratch+0 tag 9.1",
                             "end", "reduce/4", "begin sync2", "signal2 - tag 9.1",
                             "wait_signal2 - tag 9.1", "end"}));
  EXPECT_STREQ(progress().phase.load(), "sync");  // the last step reported
  EXPECT_EQ(progress().step.load(), 2);
  const auto& v = ex.traffic().per_peer();
  EXPECT_EQ(v[1].sent_bytes, 16u);
  EXPECT_EQ(v[1].sent_msgs, 1u);
  EXPECT_EQ(v[3].recv_bytes, 16u);
  EXPECT_EQ(v[3].recv_msgs, 1u);
  EXPECT_EQ(v[2].sent_msgs, 1u);  // the signals: messages of no bytes
  EXPECT_EQ(v[2].recv_msgs, 1u);
  EXPECT_EQ(v[2].sent_bytes + v[2].recv_bytes, 0u);
}

// The sequencer drives the same sink: the same binding, counting and tags, in its order
// (receives first, sends waited for at the end), and no end_step.
TEST(ExecutorSink, TheSequencersOrderGoesThroughTheSameSink) {
  Plan p = plan_of();
  Steps steps = three_steps(p);
  WordExecutor ex;
  ExecutorSink<WordExecutor> sink{ex, p, {ex.send.data(), ex.recv.data()}, 9};
  SequencerState<int> state;
  sequence(p, steps, sink, state);
  EXPECT_EQ(ex.words, (Words{"bind 16", "begin ring0", "recv3 scratch+0 tag 9.1", "send1 send+0 tag 9.1",
                             "wait@0", "reduce/4", "begin sync2", "wait_signal2 - tag 9.1",
                             "signal2 - tag 9.1", "wait@2", "wait@1", "wait@3"}));
  EXPECT_EQ(ex.traffic().total().sent_msgs, 2u);
  EXPECT_EQ(ex.traffic().total().recv_bytes, 16u);
}

// What a replay kept of a call, in place of its plan.
struct KeptCall {
  std::vector<std::size_t> scratch{32};
  CollArgs call_args;
  std::span<const std::size_t> scratch_sizes() const { return scratch; }
  const CollArgs& args() const { return call_args; }
  int size() const { return 6; }
};

TEST(ExecutorSink, AReplayEntersItsStepsThroughTheSink) {
  WordExecutor ex;
  const KeptCall kept;
  ExecutorSink<WordExecutor, KeptCall> sink{ex, kept, {ex.send.data(), ex.recv.data()}, 5};
  sink.enter_step("up", 3);
  sink.post_send(CommOp{CommKind::send, 2, Plan::send(8), 8, 4});
  sink.enter_step("up", 4);  // bound once
  sink.local(LocalOp{LocalKind::copy, Plan::recv(0), Plan::send(0), {}, 8});
  EXPECT_EQ(ex.words, (Words{"bind 32", "send2 send+8 tag 5.4", "copy/6"}));
  EXPECT_EQ(progress().step.load(), 4);
  EXPECT_EQ(ex.traffic().per_peer()[2].sent_bytes, 8u);
}

}  // namespace
}  // namespace collscope
