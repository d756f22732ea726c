// pairs: one pair at a time, every a < b in turn (pingpong --pairs all; --pairs A,B
// measures one of them). A step is one pair's round trip; everyone else rests.
#include "collscope/schedules.hpp"
#include "round_trip.hpp"

namespace collscope::schedules {

std::vector<P2pStep> p2p_pairs_steps(int nranks) {
  std::vector<P2pStep> steps;
  for (int a = 0; a < nranks; ++a)
    for (int b = a + 1; b < nranks; ++b) steps.push_back({{{a, b}}});
  return steps;
}

Steps p2p_pairs(Plan& p, const P2pStep& step, const char* phase) {
  return round_trip_in(p, step, phase);
}

}  // namespace collscope::schedules
