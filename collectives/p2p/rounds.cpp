// rounds: a round-robin tournament (patterns/tournament.hpp), N-1 rounds (N odd: N, one
// rank resting in each) of disjoint pairs covering every rank; every pair of a round does
// its round trip at the same time, so each link is loaded as well as alone.
#include "collscope/patterns/tournament.hpp"
#include "collscope/schedules.hpp"
#include "round_trip.hpp"

namespace collscope::schedules {

std::vector<P2pStep> p2p_rounds_steps(int nranks) {
  std::vector<P2pStep> steps;
  for (std::vector<patterns::RankPair>& round : patterns::tournament_rounds(nranks))
    steps.push_back({std::move(round)});
  return steps;
}

Steps p2p_rounds(Plan& p, const P2pStep& step, const char* phase) {
  return round_trip_in(p, step, phase);
}

}  // namespace collscope::schedules
