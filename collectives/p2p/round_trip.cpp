// One round trip (round_trip.hpp).
#include "round_trip.hpp"

namespace collscope::schedules {

Steps round_trip(Plan& p, bool initiator, int peer, const char* phase) {
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

Steps round_trip_in(Plan& p, const P2pStep& step, const char* phase) {
  const patterns::RankPair* pair = pair_of(step, p.rank());
  if (!pair) return Steps();  // resting: no messages
  return round_trip(p, pair->a == p.rank(), partner_in(step, p.rank()), phase);
}

}  // namespace collscope::schedules
