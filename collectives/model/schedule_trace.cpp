#include "collscope/schedule_trace.hpp"

#include "collscope/sequencer.hpp"

namespace collscope {

namespace {

// Writes the sequencer's operations as trace events; a message's handle is the index of
// the event that posted it (events are numbered from 0 across the whole call, however
// many batches they are written in).
struct TraceSink {
  using Handle = std::uint32_t;
  std::vector<TraceEvent>* out;
  std::uint32_t next = 0;  // the index of the next event

  Handle push(const TraceEvent& e) {
    out->push_back(e);
    return next++;
  }
  void begin_step(const Step&) {}
  Handle post_recv(const CommOp& op) { return push({TraceOp::recv, op.peer, 0, op.tag, 0, op.bytes}); }
  Handle post_send(const CommOp& op) { return push({TraceOp::send, op.peer, 0, op.tag, 0, op.bytes}); }
  void wait(Handle& h) { push({TraceOp::wait, -1, 0, 0, h, 0}); }
  void local(const LocalOp& op) {
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
  TraceSink sink_{nullptr};
  SequencerState<std::uint32_t> state_;
  bool ended_ = false;
};

}  // namespace

RankTrace trace_of(Plan& plan, Steps& steps) {
  RankTrace t;
  TraceSink sink{&t.events};
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
