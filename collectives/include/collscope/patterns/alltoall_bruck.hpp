// Bruck all-to-all schedule (Bruck, Ho, Kipnis, Upfal, Weathersby, IEEE TPDS 1997), as
// pure functions. Work buffer positions i = 0 .. N-1, one block each:
//   rotation:  position i takes send block r+i (the block addressed i ranks ahead);
//   step k = 0 .. ceil(log2 N)-1: every position i whose bit k is set is sent to
//     r + 2^k, and the same positions are refilled from r - 2^k;
//   after the steps position i holds the block that rank r-i addressed to r, so the
//   inverse rotation puts position i into receive block r-i.
// A block travelling distance i moves once per set bit of i, always at position i.
#pragma once

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

// ceil(log2 N): 0 for N = 1.
inline int a2a_bruck_steps(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}
inline int a2a_bruck_send_peer(int rank, int n, int step) { return mod(rank + (1 << step), n); }
inline int a2a_bruck_recv_peer(int rank, int n, int step) { return mod(rank - (1 << step), n); }
inline bool a2a_bruck_moves(int position, int step) { return ((position >> step) & 1) != 0; }
// Positions moved at step k: how many i in [0, N) have bit k set.
inline int a2a_bruck_blocks_at(int n, int step) {
  const int half = 1 << step, period = half << 1;
  const int rem = n % period;
  return (n / period) * half + (rem > half ? rem - half : 0);
}
// The largest message of the schedule, in blocks.
inline int a2a_bruck_max_blocks(int n) {
  int most = 0;
  for (int k = 0; k < a2a_bruck_steps(n); ++k)
    most = a2a_bruck_blocks_at(n, k) > most ? a2a_bruck_blocks_at(n, k) : most;
  return most;
}
// Rotation: the send block that starts at position i, and the receive block that
// position i ends in.
inline int a2a_bruck_first_block(int rank, int n, int position) { return mod(rank + position, n); }
inline int a2a_bruck_last_block(int rank, int n, int position) { return mod(rank - position, n); }

}  // namespace collscope::patterns
