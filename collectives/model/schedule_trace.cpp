#include "collscope/schedule_trace.hpp"

#include "collscope/sequencer.hpp"

namespace collscope {

RankTrace trace_of(Plan& plan, Steps& steps) {
  RankTrace t;
  Sequencer seq;
  seq.start(plan, steps);
  for (const Action* a = &seq.next(); a->kind != Action::Kind::end; a = &seq.next()) {
    switch (a->kind) {
      case Action::Kind::post_recv:
        seq.handle(a->id) = t.recv(a->comm->peer, a->comm->bytes, a->comm->tag);
        break;
      case Action::Kind::post_send:
        seq.handle(a->id) = t.send(a->comm->peer, a->comm->bytes, a->comm->tag);
        break;
      case Action::Kind::wait: t.wait(static_cast<std::uint32_t>(seq.handle(a->id))); break;
      case Action::Kind::local:
        if (a->local->kind == LocalKind::copy) t.copy(a->local->bytes);
        else t.reduce(a->local->bytes);
        break;
      case Action::Kind::begin_step:
      case Action::Kind::end: break;
    }
  }
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
