// Dissemination barrier schedule (Hensgen, Finkel, Manber 1988), as pure functions.
//
//   ceil(log2 N) rounds, k = 0, 1, ...: rank r signals r + 2^k and waits for r - 2^k.
//   After round k a rank has heard, directly or through others, from the 2^(k+1) - 1
//   ranks behind it; after the last round from all N - 1 others.
#pragma once

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

// ceil(log2 N): 0 for N = 1.
inline int dissemination_rounds(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}
inline int dissemination_signal_peer(int rank, int n, int round) {
  return mod(rank + (1 << round), n);
}
inline int dissemination_wait_peer(int rank, int n, int round) {
  return mod(rank - (1 << round), n);
}

}  // namespace collscope::patterns
