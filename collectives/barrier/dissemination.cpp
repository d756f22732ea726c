// Dissemination barrier (Hensgen, Finkel, Manber, "Two algorithms for barrier
// synchronization", IJPP 17(1) 1988; Open MPI coll/base "bruck" barrier, MPICH's).
//
//   N = 5, round k: rank r signals r + 2^k and waits for r - 2^k
//   round 0: 0->1 1->2 2->3 3->4 4->0     r has heard from r-1
//   round 1: 0->2 1->3 2->4 3->0 4->1     ... from r-1 .. r-3
//   round 2: 0->4 1->0 2->1 3->2 4->3     ... from r-1 .. r-7: everyone
//
// A rank leaves only after every other rank has entered: rank s's arrival reaches r
// along the hops given by the binary digits of r - s (mod N), each hop a signal sent
// after the sender's own earlier rounds completed. Every rank sends and receives
// ceil(log2 N) zero-byte signals, on every N (no power-of-two restriction).
// Limits: none. The signals are zero-byte messages, counted as messages.
#include "collscope/patterns/dissemination.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

// Round k's signals carry their own tag, so a fast rank's round k+1 signal can never
// be taken for a slow rank's round k.
Steps barrier_dissemination(Plan& p) {
  const int n = p.size(), r = p.rank();
  const int rounds = patterns::dissemination_rounds(n);
  std::uint32_t tags[32];
  for (int k = 0; k < rounds; ++k) tags[k] = p.tag();
  StepBuilder s(p);
  for (int k = 0; k < rounds; ++k) {
    s.wait_signal(patterns::dissemination_wait_peer(r, n, k), tags[k]);
    s.signal(patterns::dissemination_signal_peer(r, n, k), tags[k]);
    co_yield s.step("dissemination", k);
  }
}

}  // namespace collscope::schedules
