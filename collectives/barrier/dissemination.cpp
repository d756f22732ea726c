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
// Limits: none. The signals are zero-byte messages (Comm::signal), counted as messages.
#include "collscope/barrier.hpp"
#include "collscope/patterns/dissemination.hpp"

namespace collscope {

// Round k's signals carry local tag k (below 32 rounds, well inside 0..255).
void barrier_dissemination(Comm& comm, const CollArgs&) {
  const int n = comm.size(), r = comm.rank();
  for (int k = 0; k < patterns::dissemination_rounds(n); ++k) {
    comm.step("dissemination", k);
    const auto tag = static_cast<std::uint32_t>(k);
    Request reqs[2] = {comm.expect_signal(patterns::dissemination_wait_peer(r, n, k), tag),
                       comm.signal(patterns::dissemination_signal_peer(r, n, k), tag)};
    comm.wait_all(reqs);
  }
}

}  // namespace collscope
