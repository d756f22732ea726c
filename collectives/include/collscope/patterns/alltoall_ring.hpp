// Store-and-forward all-to-all on a ring, as pure functions.
//
// Rank r only ever sends to r+1 and receives from r-1. A block is named by its origin
// (the rank whose send buffer holds it) and its destination. N - 1 steps, k = 0 .. N-2:
//   rank r sends to r+1 one message of N-1-k blocks: those that left rank r-k,
//     addressed to r+1, r+2, ..., r+N-1-k, nearest destination first;
//   rank r receives from r-1 the N-1-k blocks that left rank r-1-k, addressed to
//     r, r+1, ..., r+N-2-k: it keeps the first (addressed to itself) and forwards the
//     other N-2-k, unchanged and in the same order, as its message of step k+1.
// A block travelling distance d is sent d times, so each rank sends
// sum_{k} (N-1-k) = N(N-1)/2 blocks in N-1 messages (and receives as many).
#pragma once

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

inline int a2a_ring_next(int rank, int n) { return mod(rank + 1, n); }
inline int a2a_ring_prev(int rank, int n) { return mod(rank - 1, n); }
inline int a2a_ring_steps(int n) { return n - 1; }
// Blocks in every message of step k.
inline int a2a_ring_blocks_at(int n, int step) { return n - 1 - step; }
// The message rank r sends at step k: origin of its blocks, destination of block i.
inline int a2a_ring_send_origin(int rank, int n, int step) { return mod(rank - step, n); }
inline int a2a_ring_send_dest(int rank, int n, int i) { return mod(rank + 1 + i, n); }
// The message rank r receives at step k: origin of its blocks, destination of block i.
inline int a2a_ring_recv_origin(int rank, int n, int step) { return mod(rank - 1 - step, n); }
inline int a2a_ring_recv_dest(int rank, int n, int i) { return mod(rank + i, n); }

}  // namespace collscope::patterns
