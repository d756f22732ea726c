#include "collscope/schedule_trace.hpp"

#include "collscope/sequencer.hpp"
#include "written_ranges.hpp"

namespace collscope {

namespace {

using detail::WrittenRanges;

// Writes the sequencer's operations as trace events; a message's handle is the index of
// the event that posted it (events are numbered from 0 across the whole call, however
// many batches they are written in). A send is marked from_input unless it reads a byte
// the rank has written earlier in the call, in the sequencer's order (a receive counts
// as written from when it is posted: no valid schedule sends what it is receiving).
// Without `out` it only keeps the written ranges (written_before's pass).
struct TraceSink {
  using Handle = std::uint32_t;
  const Plan* plan;
  std::vector<TraceEvent>* out = nullptr;
  std::uint32_t next = 0;  // the index of the next event
  WrittenRanges written{};

  Handle push(const TraceEvent& e) {
    if (out) out->push_back(e);
    return next++;
  }
  void begin_step(const Step&) {}
  Handle post_recv(const CommOp& op) {
    written.add(plan->locate(op.buf, op.bytes));
    return push({.op = TraceOp::recv, .peer = op.peer, .tag = op.tag, .bytes = op.bytes});
  }
  Handle post_send(const CommOp& op) {
    const bool from_input = !written.touches(plan->locate(op.buf, op.bytes));
    return push({.op = TraceOp::send, .from_input = from_input, .peer = op.peer, .tag = op.tag,
                 .bytes = op.bytes});
  }
  void wait(Handle& h) { push({.op = TraceOp::wait, .request = h}); }
  void local(const LocalOp& op) {
    written.add(plan->locate(op.out, op.bytes));
    push({.op = op.kind == LocalKind::copy ? TraceOp::copy : TraceOp::reduce, .bytes = op.bytes});
  }
};

// What counts as written when the call starts. In place, the receive buffer holds the
// caller's input, but in a loop of calls the previous call wrote its result there: bytes
// this call writes at any point were written just before it starts (dirty in the cache,
// like bytes written in the call), and only those it never writes are the input.
// Out of place nothing: a valid schedule reads nothing but the send buffer before
// writing it, and never writes the send buffer.
WrittenRanges written_before(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
                             bool in_place) {
  if (!in_place) return {};
  Plan plan = make_plan(algo, rank, nranks, args, in_place);
  Steps steps = schedule_of(algo, plan);
  TraceSink sink{&plan};
  SequencerState<std::uint32_t> state;
  sequence(plan, steps, sink, state);
  return std::move(sink.written);
}

// What a source keeps of a step's lists between its steps; more is freed (a call of
// thousands of ranks holds a source per rank).
constexpr std::size_t kKeepBytes = std::size_t{16} << 10;

// One rank's trace, produced a step at a time as the simulator asks for it.
class ScheduleSource final : public EventSource {
 public:
  ScheduleSource(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
                 bool in_place)
      : plan_(make_plan(algo, rank, nranks, args, in_place)), steps_(schedule_of(algo, plan_)) {
    sink_.written = written_before(algo, rank, nranks, args, in_place);
    sequence_begin(state_);
  }
  bool fill(std::vector<TraceEvent>& out) override {
    sink_.out = &out;
    const std::size_t before = out.size();
    // A step may issue nothing (its operations are all deferred to the next one). Once
    // issued, a step's lists are freed: between its turns a rank holds no step, however
    // large the one it issued or the one to come (the steps are built when asked for).
    while (!ended_ && out.size() == before) {
      ended_ = !sequence_next(plan_, steps_, sink_, state_);
      plan_.drop_built_step();
    }
    release_step_lists(state_, kKeepBytes);
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

std::vector<RankTrace> traces_of(const Algorithm& algo, int nranks, const CollArgs& args,
                                 bool in_place) {
  std::vector<RankTrace> out(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    ScheduleSource source(algo, r, nranks, args, in_place);
    while (source.fill(out[static_cast<std::size_t>(r)].events)) {
    }
  }
  return out;
}

std::unique_ptr<EventSource> schedule_source(const Algorithm& algo, int rank, int nranks,
                                             const CollArgs& args, bool in_place) {
  return std::make_unique<ScheduleSource>(algo, rank, nranks, args, in_place);
}

TraceTotals schedule_totals(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
                            bool in_place) {
  Plan plan = make_plan(algo, rank, nranks, args, in_place);
  Steps steps = schedule_of(algo, plan);
  TraceTotals t;
  while (steps.next()) {
    plan.freeze();
    const Step& s = steps.value();
    for (const CommOp& op : s.comm) {
      if (op.receives()) {
        t.recv_bytes += op.bytes;
        ++t.recv_msgs;
      } else {
        t.sent_bytes += op.bytes;
        ++t.sent_msgs;
      }
    }
    for (const LocalOp& op : s.local)  // avg's division counts as a reduction (TraceSink)
      (op.kind == LocalKind::copy ? t.copied_bytes : t.reduced_bytes) += op.bytes;
    t.events += 2 * s.comm.size() + s.local.size();  // each message posted and waited for
  }
  plan.freeze();
  return t;
}

}  // namespace collscope
