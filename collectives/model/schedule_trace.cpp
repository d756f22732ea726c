#include "collscope/schedule_trace.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "collscope/sequencer.hpp"

namespace collscope {

namespace {

// The bytes a rank has written so far in the call (received into, or a reduction's,
// copy's or division's output), as merged ranges per space of Plan::locate.
class WrittenRanges {
 public:
  void add(Range r) {
    if (r.begin >= r.end) return;
    auto& ranges = space(r.space);
    auto it = ranges.upper_bound(r.begin);  // the first range that starts after r
    if (it != ranges.begin() && std::prev(it)->second >= r.begin) {
      --it;  // r extends the range before it (no allocation: the usual case)
      it->second = std::max(it->second, r.end);
      absorb(ranges, it);
      return;
    }
    it = ranges.emplace_hint(it, r.begin, r.end);
    absorb(ranges, it);
  }
  // Whether any byte of r has been written.
  bool touches(const Range& r) const {
    if (r.begin >= r.end || static_cast<std::size_t>(r.space) >= spaces_.size()) return false;
    const auto& ranges = spaces_[static_cast<std::size_t>(r.space)];
    const auto it = ranges.lower_bound(r.end);  // ranges before it start before r ends
    return it != ranges.begin() && std::prev(it)->second > r.begin;
  }

 private:
  using Ranges = std::map<std::size_t, std::size_t>;  // begin -> end, disjoint, not adjacent
  Ranges& space(int s) {
    const auto i = static_cast<std::size_t>(s);
    if (i >= spaces_.size()) spaces_.resize(i + 1);
    return spaces_[i];
  }
  // Merges the ranges after `it` that it now reaches into it.
  static void absorb(Ranges& ranges, Ranges::iterator it) {
    for (auto next = std::next(it); next != ranges.end() && next->first <= it->second;) {
      it->second = std::max(it->second, next->second);
      next = ranges.erase(next);
    }
  }
  std::vector<Ranges> spaces_;
};

// Writes the sequencer's operations as trace events; a message's handle is the index of
// the event that posted it (events are numbered from 0 across the whole call, however
// many batches they are written in). A send is marked from_input unless it reads a byte
// the rank has written earlier in the call, in the sequencer's order (a receive counts
// as written from when it is posted: no valid schedule sends what it is receiving).
struct TraceSink {
  using Handle = std::uint32_t;
  const Plan* plan;
  std::vector<TraceEvent>* out = nullptr;
  std::uint32_t next = 0;  // the index of the next event
  WrittenRanges written{};

  Handle push(const TraceEvent& e) {
    out->push_back(e);
    return next++;
  }
  void begin_step(const Step&) {}
  Handle post_recv(const CommOp& op) {
    written.add(plan->locate(op.buf, op.bytes));
    return push({TraceOp::recv, op.peer, 0, op.tag, 0, op.bytes});
  }
  Handle post_send(const CommOp& op) {
    const bool from_input = !written.touches(plan->locate(op.buf, op.bytes));
    return push({TraceOp::send, op.peer, 0, op.tag, 0, op.bytes, from_input});
  }
  void wait(Handle& h) { push({TraceOp::wait, -1, 0, 0, h, 0}); }
  void local(const LocalOp& op) {
    written.add(plan->locate(op.out, op.bytes));
    push({op.kind == LocalKind::copy ? TraceOp::copy : TraceOp::reduce, -1, 0, 0, 0, op.bytes});
  }
};

// One rank's trace, produced a step at a time as the simulator asks for it.
class ScheduleSource final : public EventSource {
 public:
  ScheduleSource(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
                 bool in_place)
      : plan_(make_plan(algo, rank, nranks, args, in_place)), steps_(schedule_of(algo, plan_)) {
    sequence_begin(state_);
  }
  bool fill(std::vector<TraceEvent>& out) override {
    sink_.out = &out;
    const std::size_t before = out.size();
    // A step may issue nothing (its operations are all deferred to the next one).
    while (!ended_ && out.size() == before) ended_ = !sequence_next(plan_, steps_, sink_, state_);
    return out.size() > before;
  }

 private:
  Plan plan_;
  Steps steps_;  // refers to plan_: the source never moves (it lives behind a pointer)
  TraceSink sink_{&plan_};
  SequencerState<std::uint32_t> state_;
  bool ended_ = false;
};

}  // namespace

RankTrace trace_of(Plan& plan, Steps& steps) {
  RankTrace t;
  TraceSink sink{&plan, &t.events};
  SequencerState<std::uint32_t> state;
  sequence(plan, steps, sink, state);
  return t;
}

std::vector<RankTrace> traces_of(const Algorithm& algo, int nranks, const CollArgs& args,
                                 bool in_place) {
  std::vector<RankTrace> out;
  out.reserve(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    Plan plan = make_plan(algo, r, nranks, args, in_place);
    Steps steps = schedule_of(algo, plan);
    out.push_back(trace_of(plan, steps));
  }
  return out;
}

std::unique_ptr<EventSource> schedule_source(const Algorithm& algo, int rank, int nranks,
                                             const CollArgs& args, bool in_place) {
  return std::make_unique<ScheduleSource>(algo, rank, nranks, args, in_place);
}

TraceTotals schedule_totals(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
                            bool in_place) {
  ScheduleSource source(algo, rank, nranks, args, in_place);
  TraceTotals totals;
  std::vector<TraceEvent> batch;
  while (source.fill(batch)) {
    for (const TraceEvent& e : batch) totals.add(e);
    batch.clear();
  }
  return totals;
}

}  // namespace collscope
