// The sequencer's sink for an executor (sequencer.hpp): what every executor does around
// its own message and local operations, written once.
//
//   - the call's scratch is bound at its first step (the schedule has declared it by then);
//   - each step is reported for the watchdog (progress.hpp);
//   - each message is counted as it is handed over (Traffic: the counted volume);
//   - a message's buffer is resolved from its BufRef (signals carry none).
//
// The executor `Ex` supplies what differs, and befriends ExecutorSink<Ex>:
//   using Handle = ...;
//   Traffic& traffic();
//   std::byte* address(BufRef) const;
//   void bind(std::span<const std::size_t> scratch_sizes, CallBuffers);
//   void begin_step(const Plan&, const Step&);                 // anything per step
//   Handle post_recv(const CommOp&, std::byte* into, Tag);     // into: null for a signal
//   Handle post_send(const CommOp&, const std::byte* from, Tag);
//   void wait(Handle&);
//   void local(const LocalOp&, const CollArgs&, int nranks);
#pragma once

#include <cstdint>

#include "collscope/executor.hpp"
#include "collscope/progress.hpp"
#include "collscope/schedule.hpp"
#include "collscope/transport.hpp"

namespace collscope {

template <class Ex>
struct ExecutorSink {
  using Handle = typename Ex::Handle;
  Ex& ex;
  const Plan& plan;
  CallBuffers buffers;
  std::uint32_t seq;
  bool bound = false;

  void begin_step(const Step& s) {
    if (!bound) ex.bind(plan.scratch_sizes(), buffers);
    bound = true;
    report_step(s.phase, s.index);
    ex.begin_step(plan, s);
  }
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
  void local(const LocalOp& op) { ex.local(op, plan.args(), plan.size()); }
};

}  // namespace collscope
