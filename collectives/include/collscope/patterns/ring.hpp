// Ring schedules (reduce-scatter then allgather), as pure functions.
//
//   rank r sends to r+1 and receives from r-1.  With N ranks and N blocks:
//   reduce-scatter step k (0..N-2): send block r-k, receive block r-k-1 and reduce it;
//     after N-1 steps rank r holds the fully reduced block r+1.
//   allgather step k (0..N-2): send block r+1-k, receive block r-k (a finished block).
#pragma once

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

inline int ring_next(int rank, int n) { return mod(rank + 1, n); }
inline int ring_prev(int rank, int n) { return mod(rank - 1, n); }

inline int ring_rs_send_block(int rank, int n, int step) { return mod(rank - step, n); }
inline int ring_rs_recv_block(int rank, int n, int step) { return mod(rank - step - 1, n); }
// The block a rank owns, fully reduced, once the reduce-scatter is over.
inline int ring_owned_block(int rank, int n) { return mod(rank + 1, n); }
inline int ring_ag_send_block(int rank, int n, int step) { return mod(rank + 1 - step, n); }
inline int ring_ag_recv_block(int rank, int n, int step) { return mod(rank - step, n); }

}  // namespace collscope::patterns
