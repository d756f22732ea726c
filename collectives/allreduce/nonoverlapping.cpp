// Reduce then broadcast (Open MPI's coll_tuned allreduce algorithm 2, "nonoverlapping"):
// a reduce to rank 0 followed by a broadcast from rank 0, the second starting when the
// first is over. Open MPI runs its own reduce and bcast there, as its decision picks them
// at that size; this twin takes the binomial ones: the reduce up MPICH's binomial tree
// (Open MPI's in-order binomial, its reduce's "binomial"), the broadcast down Open MPI's
// binomial tree (broadcast_binomial_strided), both unsegmented.
//
//   N = 4:  reduce     step 0: 1 -> 0, 3 -> 2    step 1: 2 -> 0   (rank 0 holds the sum)
//           broadcast  step 2: 0 -> 1, 0 -> 2    step 3: 1 -> 3
//
// Per rank: D up to its reduce parent, D from each reduce child, D from its broadcast
// parent, D to each broadcast child: 2 (N-1) D through the network in all, twice the ring's
// bytes on rank 0's port (2 ceil(log2 N) D). Depth 2 ceil(log2 N).
// Limits: commutative ops. Scratch: the reduce children's vectors; the partial sums live
// in the receive buffer, which the broadcast then overwrites.
#include <algorithm>

#include "collscope/schedules.hpp"
#include "collscope/tree_steps.hpp"

namespace collscope::schedules {

Steps allreduce_nonoverlapping(Plan& p) {
  const int n = p.size();
  const std::size_t bytes = p.count() * p.elem();
  const patterns::StaticTree up{patterns::TreeShape::binomial, n, 0};
  const patterns::StaticTree down{patterns::TreeShape::strided_binomial, n, 0};
  const std::uint32_t reduce_tag = p.tag(), broadcast_tag = p.tag();
  const std::size_t inbox_bytes = detail::reduce_inbox_bytes(up, p.rank(), bytes);
  const BufRef inbox = inbox_bytes > 0 ? p.scratch(inbox_bytes) : BufRef{};
  auto reduce = detail::tree_reduce_steps(p, up, Plan::send(), Plan::recv(), inbox, bytes, reduce_tag, 0);
  while (reduce.next()) co_yield reduce.value();
  auto broadcast = detail::tree_broadcast_steps(p, down, Plan::recv(), Plan::recv(), bytes,
                                                broadcast_tag, std::max(1, up.height()));
  while (broadcast.next()) co_yield broadcast.value();
}

}  // namespace collscope::schedules
