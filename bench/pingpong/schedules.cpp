// pingpong's schedules (schedules.hpp).
#include "schedules.hpp"

#include "collscope/coll_args.hpp"

namespace collscope::bench::pingpong {

Plan payload_plan(int rank, int nranks, std::size_t bytes) {
  CollArgs args;
  args.count = bytes;
  args.dtype = DataType::uint8;
  return Plan(rank, nranks, args, {});
}

Steps round_trip_steps(Plan& p, bool initiator, int peer, const char* phase) {
  const std::uint32_t ping = p.tag(), pong = p.tag();
  const std::size_t bytes = p.count();
  StepBuilder s(p);
  auto send = [&](BufRef from, std::uint32_t tag) -> StepBuilder& {
    return bytes > 0 ? s.send(peer, from, bytes, tag) : s.signal(peer, tag);
  };
  auto recv = [&](std::uint32_t tag) -> StepBuilder& {
    return bytes > 0 ? s.recv(peer, Plan::recv(), bytes, tag) : s.wait_signal(peer, tag);
  };
  co_yield (initiator ? send(Plan::send(), ping) : recv(ping)).step(phase, 0);
  co_yield (initiator ? recv(pong) : send(Plan::recv(), pong)).step(phase, 1);
}

Steps ring_step_steps(Plan& p, int to, int from, const char* phase) {
  const std::uint32_t tag = p.tag();
  const std::size_t bytes = p.count();
  StepBuilder s(p);
  if (bytes > 0) s.recv(from, Plan::recv(), bytes, tag).send(to, Plan::send(), bytes, tag);
  else s.wait_signal(from, tag).signal(to, tag);
  co_yield s.step(phase, 0);
}

}  // namespace collscope::bench::pingpong
