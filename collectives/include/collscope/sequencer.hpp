// The order in which a schedule's operations are issued by an executor that posts
// non-blocking messages and waits for them (the host executor; the time model replays
// the same order, so it predicts what the executor really does).
//
// For each non-empty step:
//   1. post the step's receives;
//   2. run the previous step's local ops, if that step allowed overlap (they overlap
//      these receives);
//   3. post the step's sends;
//   4. run the step's leading local ops that touch none of the bytes its receives
//      write (they overlap the messages in flight: an allgather places its own block
//      while the first block travels);
//   5. wait for the step's receives;
//   6. run the step's other local ops, or keep them all for step 2 of the next step.
// Sends stay in flight after their step. One is waited for only when
//   - a receive or a local op is about to write bytes it reads (its buffer is reused),
//   - more than `window` sends are in flight (the oldest goes first), or
//   - the call ends.
// Overlap is found through Plan::locate, so aliased in-place buffers count too.
//
// sequence() is pure: it drives a Sink, which does the work. A sink has
//   using Handle = ...;                      // what a posted message is waited on by
//   void begin_step(const Step&);
//   Handle post_recv(const CommOp&);         // receives and wait_signals
//   Handle post_send(const CommOp&);         // sends and signals
//   void wait(Handle&);
//   void local(const LocalOp&);
// It is a template so that the host executor's calls inline: the order costs a few
// branches per operation, not a layer of bookkeeping.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "collscope/fifo.hpp"
#include "collscope/schedule.hpp"

namespace collscope {

inline constexpr std::size_t kSendWindow = 64;

// What sequence() keeps between steps; reused from call to call, so a warm executor
// allocates nothing per call.
template <class Handle>
struct SequencerState {
  struct InFlight {
    Handle handle;
    Range range;  // the bytes the send reads
  };
  Fifo<InFlight> in_flight;  // sends, oldest first (the oldest leaves without shifting)
  // A range of one buffer that covers every in-flight send's (maybe more: it is made
  // exact only by a scan), so a write that misses it needs no scan; `cover_mixed`: the
  // sends read from several buffers, and every write scans.
  Range cover;
  bool cover_mixed = false;
  std::vector<Handle> recvs;        // the current step's
  std::vector<Range> recv_ranges;
  std::vector<LocalOp> deferred;    // the last step's local ops, when it let them overlap
};

namespace detail {

template <class Sink, class Handle>
void wait_in_flight(Sink& sink, SequencerState<Handle>& st, std::size_t i) {
  sink.wait(st.in_flight[i].handle);
  st.in_flight.erase(i);
}

template <class Handle>
void widen_cover(SequencerState<Handle>& st, const Range& r, bool first) {
  if (first) {
    st.cover = r;
    st.cover_mixed = false;
  } else if (r.space != st.cover.space) {
    st.cover_mixed = true;
  } else {
    st.cover.begin = std::min(st.cover.begin, r.begin);
    st.cover.end = std::max(st.cover.end, r.end);
  }
}

template <class Sink, class Handle>
void post_in_flight(Sink& sink, SequencerState<Handle>& st, const CommOp& op, const Range& r) {
  widen_cover(st, r, st.in_flight.empty());
  st.in_flight.push_back({sink.post_send(op), r});
}

// Waits for the sends that read bytes of `r`, oldest first; the scan makes the cover
// exact again.
template <class Sink, class Handle>
void wait_sends_overlapping(Sink& sink, SequencerState<Handle>& st, const Range& r) {
  if (!st.cover_mixed && !st.cover.overlaps(r)) return;
  bool first = true;
  for (std::size_t i = 0; i < st.in_flight.size();) {
    if (st.in_flight[i].range.overlaps(r)) {
      wait_in_flight(sink, st, i);  // erases entry i
    } else {
      widen_cover(st, st.in_flight[i].range, first);
      first = false;
      ++i;
    }
  }
}

template <class Sink, class Handle>
void run_local(Sink& sink, SequencerState<Handle>& st, const Plan& plan, const LocalOp& op) {
  if (!st.in_flight.empty()) wait_sends_overlapping(sink, st, plan.locate(op.out, op.bytes));
  sink.local(op);
}

template <class Handle>
bool touches_recvs(const SequencerState<Handle>& st, const Plan& plan, const LocalOp& op) {
  const Range out = plan.locate(op.out, op.bytes), a = plan.locate(op.a, op.bytes);
  const Range b = op.kind == LocalKind::reduce ? plan.locate(op.b, op.bytes) : Range{};
  for (const Range& r : st.recv_ranges)
    if (r.overlaps(out) || r.overlaps(a) || r.overlaps(b)) return true;
  return false;
}

template <class Sink, class Handle>
void sequence_step(Sink& sink, SequencerState<Handle>& st, const Plan& plan, const Step& s,
                   std::size_t window) {
  sink.begin_step(s);
  st.recvs.clear();
  st.recv_ranges.clear();
  for (const CommOp& op : s.comm) {  // 1
    if (!op.receives()) continue;
    const Range r = plan.locate(op.buf, op.bytes);
    if (!st.in_flight.empty()) wait_sends_overlapping(sink, st, r);
    st.recvs.push_back(sink.post_recv(op));
    st.recv_ranges.push_back(r);
  }
  for (const LocalOp& op : st.deferred) run_local(sink, st, plan, op);  // 2
  st.deferred.clear();
  for (const CommOp& op : s.comm) {  // 3
    if (op.receives()) continue;
    post_in_flight(sink, st, op, plan.locate(op.buf, op.bytes));
    if (st.in_flight.size() > window) wait_in_flight(sink, st, 0);
  }
  std::size_t early = 0;  // 4
  if (!s.overlap_next)
    while (early < s.local.size() && !touches_recvs(st, plan, s.local[early]))
      run_local(sink, st, plan, s.local[early++]);
  for (Handle& h : st.recvs) sink.wait(h);  // 5
  if (s.overlap_next)  // 6
    st.deferred.assign(s.local.begin(), s.local.end());
  else
    for (std::size_t i = early; i < s.local.size(); ++i) run_local(sink, st, plan, s.local[i]);
}

}  // namespace detail

// The same, one step at a time, for a consumer that pulls a rank's operations as it needs
// them (the time model streams every rank's trace instead of holding them all):
// sequence_begin, then sequence_next until it returns false. sequence_next issues the
// next non-empty step, or, once the steps are over, what is left (deferred local ops,
// sends in flight) and returns false.
template <class Handle>
void sequence_begin(SequencerState<Handle>& state) {
  state.in_flight.clear();
  state.deferred.clear();
}

namespace detail {

// What is left once the steps are over: deferred local ops, then the sends in flight.
template <class Sink>
void sequence_end(Plan& plan, Sink& sink, SequencerState<typename Sink::Handle>& state) {
  plan.freeze();
  for (const LocalOp& op : state.deferred) detail::run_local(sink, state, plan, op);
  state.deferred.clear();
  while (!state.in_flight.empty()) detail::wait_in_flight(sink, state, 0);
}

}  // namespace detail

template <class Sink>
bool sequence_next(Plan& plan, Steps& steps, Sink& sink,
                   SequencerState<typename Sink::Handle>& state, std::size_t window = kSendWindow) {
  while (steps.next()) {
    plan.freeze();  // once the first step exists
    const Step& s = steps.value();
    if (s.empty()) continue;
    detail::sequence_step(sink, state, plan, s, window == 0 ? 1 : window);
    return true;
  }
  detail::sequence_end(plan, sink, state);
  return false;
}

// Frees the lists sequence_step keeps for the step it issued (its receives and their
// ranges, rebuilt by every step) once they hold more than `keep_bytes`: for a consumer
// that holds thousands of sequencers part-way through their calls, each after a step of
// thousands of receives.
template <class Handle>
void release_step_lists(SequencerState<Handle>& st, std::size_t keep_bytes) {
  if (st.recvs.capacity() * sizeof(Handle) > keep_bytes) std::vector<Handle>().swap(st.recvs);
  if (st.recv_ranges.capacity() * sizeof(Range) > keep_bytes)
    std::vector<Range>().swap(st.recv_ranges);
}

// Issues every step of `steps` to `sink` in the order above; the plan is frozen once the
// first step exists. `state` is cleared first.
template <class Sink>
void sequence(Plan& plan, Steps& steps, Sink& sink,
              SequencerState<typename Sink::Handle>& state, std::size_t window = kSendWindow) {
  sequence_begin(state);
  while (sequence_next(plan, steps, sink, state, window)) {
  }
}

}  // namespace collscope
