// The order in which schedules are issued (collscope/sequencer.hpp), which both the host
// executor and the time model follow: receives before sends, overlapped local ops
// between the next step's receives and sends, early local ops, sends left in flight
// until their bytes are reused, the window of sends in flight, and the end of a call.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "collscope/sequencer.hpp"
#include "test_steps.hpp"

namespace collscope {
namespace {

using test::plan_of;

// Each operation as a short word: "recv1@0" (post a receive from rank 1, the first
// message posted), "send2@1", "wait@0" (wait for message 0), "reduce", "copy",
// "divide"; the start of a step is left out.
struct WordSink {
  using Handle = int;
  std::vector<std::string> words;
  int posted = 0;
  void begin_step(const Step&) {}
  int post_recv(const CommOp& op) { return post("recv", op); }
  int post_send(const CommOp& op) { return post("send", op); }
  void wait(int& h) { words.push_back("wait@" + std::to_string(h)); }
  void local(const LocalOp& op) {
    static const char* names[] = {"reduce", "copy", "divide"};
    words.push_back(names[static_cast<int>(op.kind)]);
  }
  int post(const char* what, const CommOp& op) {
    words.push_back(what + std::to_string(op.peer) + "@" + std::to_string(posted));
    return posted++;
  }
};

std::vector<std::string> issue_order(Plan& plan, Steps& steps, std::size_t window = 64) {
  WordSink sink;
  SequencerState<int> state;
  sequence(plan, steps, sink, state, window);
  return sink.words;
}

using Words = std::vector<std::string>;

// One ring step: receives first, then sends, then the wait, then the reduction of what
// arrived; the send stays in flight to the end of the call.
Steps ring_step(Plan& p) {
  const BufRef in = p.scratch(16);
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  co_yield test::ring_ops(s, in, tag).step("ring", 0);
}

TEST(Sequencer, ReceivesThenSendsThenWaitThenLocalOps) {
  Plan p = plan_of();
  Steps s = ring_step(p);
  EXPECT_EQ(issue_order(p, s), (Words{"recv3@0", "send1@1", "wait@0", "reduce", "wait@1"}));
}

// Step 0's reduction overlaps step 1: it runs after step 1's receive is posted and
// before its send, which carries what it produced.
Steps pipelined(Plan& p) {
  const BufRef box = p.scratch(32);
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  s.recv(2, box, 16, tag).reduce(Plan::recv(0), Plan::send(0), box, 16);
  co_yield s.step("up", 0, true);
  s.recv(2, box.plus(16), 16, tag).send(1, Plan::recv(0), 16, tag);
  co_yield s.step("up", 1);
}

TEST(Sequencer, OverlappedLocalOpsRunBetweenTheNextReceivesAndSends) {
  Plan p = plan_of();
  Steps s = pipelined(p);
  EXPECT_EQ(issue_order(p, s), (Words{"recv2@0", "wait@0", "recv2@1", "reduce", "send1@2",
                                      "wait@1", "wait@2"}));
}

// A copy that touches nothing the step receives runs while the message travels.
Steps place_while_receiving(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  s.recv(3, Plan::recv(0), 16, tag).send(1, Plan::send(0), 16, tag);
  s.copy(Plan::recv(16), Plan::send(0), 16).copy(Plan::recv(32), Plan::recv(0), 16);
  co_yield s.step("allgather", 0);
}

TEST(Sequencer, LocalOpsThatTouchNoReceivedBytesRunEarly) {
  Plan p = plan_of();
  Steps s = place_while_receiving(p);
  EXPECT_EQ(issue_order(p, s), (Words{"recv3@0", "send1@1", "copy", "wait@0", "copy", "wait@1"}));
}

// A send's bytes are received into in the next step: the send is waited for first.
Steps reuse_a_sent_buffer(Plan& p) {
  const BufRef box = p.scratch(16);
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  co_yield s.send(1, box, 16, tag).step("s", 0);
  co_yield s.step("nothing", 1);  // empty: skipped
  co_yield s.recv(3, box, 16, tag).step("r", 2);
}

TEST(Sequencer, ASendIsWaitedForBeforeItsBytesAreReused) {
  Plan p = plan_of();
  Steps s = reuse_a_sent_buffer(p);
  EXPECT_EQ(issue_order(p, s), (Words{"send1@0", "wait@0", "recv3@1", "wait@1"}));
}

// Aliasing counts: in place, the send buffer is the receive buffer.
Steps send_then_receive_in_place(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  co_yield s.send(1, Plan::send(0), 16, tag).step("s", 0);
  co_yield s.recv(3, Plan::recv(8), 16, tag).step("r", 1);
}

TEST(Sequencer, InPlaceBuffersAlias) {
  CollArgs a;
  a.count = 64;
  Plan apart(0, 4, a, {}), same(0, 4, a, {Aliasing::same, 0});
  Steps s1 = send_then_receive_in_place(apart), s2 = send_then_receive_in_place(same);
  EXPECT_EQ(issue_order(apart, s1), (Words{"send1@0", "recv3@1", "wait@1", "wait@0"}));
  EXPECT_EQ(issue_order(same, s2), (Words{"send1@0", "wait@0", "recv3@1", "wait@1"}));
}

// Three sends in one step with a window of two: the oldest is waited for at the third.
Steps three_sends(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  s.send(1, Plan::send(0), 4, tag).send(2, Plan::send(4), 4, tag).send(3, Plan::send(8), 4, tag);
  co_yield s.step("fan out", 0);
}

TEST(Sequencer, AtMostTheWindowOfSendsIsInFlight) {
  Plan p = plan_of();
  Steps s = three_sends(p);
  EXPECT_EQ(issue_order(p, s, 2),
            (Words{"send1@0", "send2@1", "send3@2", "wait@0", "wait@1", "wait@2"}));
}

Steps declares_late(Plan& p) {
  StepBuilder s(p);
  co_yield s.copy(Plan::recv(0), Plan::send(0), 4).step("first", 0);
  p.scratch(8);  // too late: the executor may already have allocated
  co_yield s.step("second", 1);
}

TEST(Sequencer, DeclaringScratchAfterTheFirstStepIsABug) {
  Plan p = plan_of();
  Steps s = declares_late(p);
  EXPECT_THROW(issue_order(p, s), std::logic_error);
}

// A step of many copies (its list well past what a builder keeps), then one of two.
Steps large_then_small(Plan& p) {
  StepBuilder s(p);
  for (std::size_t i = 0; i < 1000; ++i) s.copy(Plan::recv(4 * i), Plan::send(4 * i), 4);
  co_yield s.step("large", 0);
  s.copy(Plan::recv(0), Plan::send(4), 4).copy(Plan::recv(4), Plan::send(0), 4);
  co_yield s.step("small", 1);
}

// What a consumer holding thousands of schedules does between their steps (the time
// model): issue a step, then drop its lists. The step reads as empty afterwards, and
// what is issued is the same as without dropping.
TEST(Sequencer, AStepDroppedOnceIssuedHoldsNoOperations) {
  Plan p = plan_of(4096);
  Steps s = large_then_small(p);
  WordSink sink;
  SequencerState<int> state;
  sequence_begin(state);
  ASSERT_TRUE(sequence_next(p, s, sink, state));
  EXPECT_EQ(s.value().local.size(), 1000u);
  p.drop_built_step();
  EXPECT_TRUE(s.value().local.empty());
  ASSERT_TRUE(sequence_next(p, s, sink, state));
  EXPECT_EQ(s.value().local.size(), 2u);
  p.drop_built_step();
  EXPECT_FALSE(sequence_next(p, s, sink, state));
  p.drop_built_step();  // no step left: nothing to drop

  Plan q = plan_of(4096);
  Steps t = large_then_small(q);
  EXPECT_EQ(sink.words, issue_order(q, t));
  EXPECT_EQ(sink.words.size(), 1002u);
}

}  // namespace
}  // namespace collscope
