// Ring reduce-scatter and ring allgather on their own, where rank r owns block r (the
// MPI layout), as pure functions. ring.hpp is the allreduce's ring, whose reduce-scatter
// leaves rank r with block r+1; these are the same rings shifted by one block.
//
//   rank r sends to r+1 and receives from r-1, N-1 steps.
//   reduce-scatter step k: send block r-k-1, receive block r-k-2 and reduce it into
//     the partial sum that goes out next step; the last step receives block r.
//   allgather step k: send block r-k (own block first), receive block r-k-1.
// The blocks depend on the rank only through the block it ends (reduce-scatter) or
// starts (allgather) with, so the schedules' shared halves pass that block as `rank`:
// with r+1 they are the allreduce's ring of ring.hpp.
#pragma once

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

inline int own_ring_rs_send_block(int rank, int n, int step) { return mod(rank - step - 1, n); }
inline int own_ring_rs_recv_block(int rank, int n, int step) { return mod(rank - step - 2, n); }
inline int own_ring_ag_send_block(int rank, int n, int step) { return mod(rank - step, n); }
inline int own_ring_ag_recv_block(int rank, int n, int step) { return mod(rank - step - 1, n); }

}  // namespace collscope::patterns
