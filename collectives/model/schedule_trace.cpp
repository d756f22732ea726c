#include "collscope/schedule_trace.hpp"

#include "collscope/sequencer.hpp"

namespace collscope {

namespace {

// Writes the sequencer's operations as trace events; a message's handle is the index of
// the event that posted it.
struct TraceSink {
  using Handle = std::uint32_t;
  RankTrace& t;
  void begin_step(const Step&) {}
  Handle post_recv(const CommOp& op) { return t.recv(op.peer, op.bytes, op.tag); }
  Handle post_send(const CommOp& op) { return t.send(op.peer, op.bytes, op.tag); }
  void wait(Handle& h) { t.wait(h); }
  void local(const LocalOp& op) {
    if (op.kind == LocalKind::copy) t.copy(op.bytes);
    else t.reduce(op.bytes);
  }
};

}  // namespace

RankTrace trace_of(Plan& plan, Steps& steps) {
  RankTrace t;
  TraceSink sink{t};
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

}  // namespace collscope
