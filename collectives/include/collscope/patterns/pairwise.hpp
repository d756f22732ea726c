// Pairwise exchange schedule (all-to-all, all-to-all-v), as pure functions.
//
//   N - 1 steps, numbered k = 1 .. N-1 (k is the distance on the ring of ranks):
//   at step k rank r sends to r+k and receives from r-k.
//   Over the N-1 steps every ordered pair (s, d), s != d, meets exactly once: at step
//   d - s (mod N), where s sends and d receives.
#pragma once

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

inline int pairwise_steps(int n) { return n - 1; }
inline int pairwise_send_peer(int rank, int n, int step) { return mod(rank + step, n); }
inline int pairwise_recv_peer(int rank, int n, int step) { return mod(rank - step, n); }
// The step at which `from` sends to `to` (from != to).
inline int pairwise_step_of(int from, int to, int n) { return mod(to - from, n); }

}  // namespace collscope::patterns
