// The one place where an executor's operations are issued (sequencer.hpp calls it a sink):
// what every executor does around its own message and local operations, written once.
//
//   - the call's scratch is bound at its first step (the schedule has declared it by then);
//   - each step is reported for the watchdog (progress.hpp);
//   - each message is counted as it is handed over (Traffic: the counted volume);
//   - a message's buffer is resolved from its BufRef (signals carry none);
//   - a message's tag is made from the call's sequence number and the op's tag.
//
// Every executor's messages pass through it, whichever way the call is issued:
//   - the host and device executors: in the sequencer's order (sequence());
//   - the NCCL executor: each step whole (issue_whole_steps() below: begin_step, the
//     step's messages, end_step, its local ops), end_step closing the step's group;
//   - the host executor's replay of a kept call: the recorded operations, in their order,
//     through enter_step / post_recv / post_send / wait / local (a replay has no Step: the
//     host executor does nothing per step besides what enter_step does).
//
// `Call` is what the call declares: a Plan, or what a replay kept of one. It has
//   std::span<const std::size_t> scratch_sizes() const;
//   const CollArgs& args() const;
//   int size() const;
//
// The executor `Ex` supplies what differs, and befriends ExecutorSink:
//   using Handle = ...;
//   Traffic& traffic();
//   std::byte* address(BufRef) const;
//   void bind(std::span<const std::size_t> scratch_sizes, CallBuffers);
//   void begin_step(const Plan&, const Step&);                 // after the step is reported
//   Handle post_recv(const CommOp&, std::byte* into, Tag);     // into: null for a signal
//   Handle post_send(const CommOp&, const std::byte* from, Tag);
//   void wait(Handle&);
//   void local(const LocalOp&, const CollArgs&, int nranks);
// and, for issue_whole_steps:
//   void end_step(const Plan&, const Step&);                   // after the step's messages
#pragma once

#include <cstdint>

#include "collscope/executor.hpp"
#include "collscope/progress.hpp"
#include "collscope/schedule.hpp"
#include "collscope/transport.hpp"

namespace collscope {

template <class Ex, class Call = Plan>
struct ExecutorSink {
  using Handle = typename Ex::Handle;
  Ex& ex;
  const Call& call;
  CallBuffers buffers;
  std::uint32_t seq;
  bool bound = false;

  // A step starts: the scratch is bound before its first message, and the watchdog is told.
  void enter_step(const char* phase, int index) {
    if (!bound) ex.bind(call.scratch_sizes(), buffers);
    bound = true;
    report_step(phase, index);
  }
  void begin_step(const Step& s) {
    enter_step(s.phase, s.index);
    ex.begin_step(call, s);
  }
  void end_step(const Step& s) { ex.end_step(call, s); }  // issue_whole_steps only
  Handle post_recv(const CommOp& op) {
    ex.traffic().count(op);
    std::byte* into = op.kind == CommKind::recv ? ex.address(op.buf) : nullptr;
    return ex.post_recv(op, into, Tag{seq, op.tag});
  }
  Handle post_send(const CommOp& op) {
    ex.traffic().count(op);
    const std::byte* from = op.kind == CommKind::send ? ex.address(op.buf) : nullptr;
    return ex.post_send(op, from, Tag{seq, op.tag});
  }
  void wait(Handle& h) { ex.wait(h); }
  void local(const LocalOp& op) { ex.local(op, call.args(), call.size()); }
};

// Issues every step of `steps` whole, in the schedule's order, for an executor whose
// stream orders the work (NCCL: a step's messages are one group, its local ops kernels
// after them): begin_step, each of the step's messages as the schedule lists them,
// end_step, then the step's local ops. Nothing is waited for; empty steps are skipped
// (as the sequencer does). The plan is frozen once the first step exists.
template <class Ex>
void issue_whole_steps(Plan& plan, Steps& steps, ExecutorSink<Ex>& sink) {
  while (steps.next()) {
    plan.freeze();
    const Step& s = steps.value();
    if (s.empty()) continue;
    sink.begin_step(s);
    for (const CommOp& op : s.comm) {
      if (op.receives()) sink.post_recv(op);
      else sink.post_send(op);
    }
    sink.end_step(s);
    for (const LocalOp& op : s.local) sink.local(op);
  }
  plan.freeze();
}

}  // namespace collscope
