// Bruck allgather (Bruck, Ho, Kipnis, Upfal & Weathersby 1997), as pure functions.
//
// Each rank works in a rotated buffer: rotated block i is real block (r + i) mod N, so
// it starts with its own block at position 0. Step k (distance d = 2^k, k < ceil(log2 N)):
//   send rotated blocks [0, m) to rank r - d, receive m blocks from rank r + d into
//   rotated blocks [d, d + m), with m = min(d, N - d).
// After the steps the rotated buffer holds every block; a local rotation by r blocks
// puts them in place.
//   N = 5, rotated buffer of rank 0 (real block numbers), '.' = not yet there:
//     start        0 . . . .
//     k=0 (d=1)    0 1 . . .     from rank 1: its block 1
//     k=1 (d=2)    0 1 2 3 .     from rank 2: its blocks 2 3
//     k=2 (d=4)    0 1 2 3 4     from rank 4: its block 4 (m = min(4, 1))
#pragma once

#include <cstddef>

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

struct BruckStep {
  int send_to = -1;
  int recv_from = -1;
  int distance = 0;  // d: the received blocks land at rotated position d
  int nblocks = 0;   // m: blocks sent (rotated [0, m)) and received (rotated [d, d + m))
};

// ceil(log2 n): the number of steps (0 for n = 1).
inline int bruck_num_steps(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

inline BruckStep bruck_step(int rank, int n, int k) {
  const int d = 1 << k;
  return {mod(rank - d, n), mod(rank + d, n), d, d < n - d ? d : n - d};
}

// Element offset of rotated block i (i <= n) in the buffer of `rank`, rotated so that
// real block `rank` comes first.
inline std::size_t rotated_offset(std::size_t count, int n, int rank, int i) {
  const std::size_t start = block_of(count, n, rank).offset;
  if (i == n) return count;
  const std::size_t real = block_of(count, n, mod(rank + i, n)).offset;
  return rank + i < n ? real - start : count - start + real;
}

// Elements of rotated blocks [first, first + len) of `rank`'s rotated buffer.
inline Block rotated_range(std::size_t count, int n, int rank, int first, int len) {
  const std::size_t lo = rotated_offset(count, n, rank, first);
  return {lo, rotated_offset(count, n, rank, first + len) - lo};
}

}  // namespace collscope::patterns
