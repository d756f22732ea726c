// Binomial broadcast on Open MPI's binomial tree (coll_tuned bcast algorithm 6,
// "binomial", unsegmented; its "bmtree"): a rank's parent is itself less its highest set
// bit, so the root's first child gets every odd rank below it (strided subtrees), where
// MPICH's binomial tree (broadcast_binomial) gives each child a contiguous run of ranks.
//
//   N = 8, root 0:   0 -> 1, 2, 4    1 -> 3, 5    2 -> 6    3 -> 7
//   step 0: 0 -> 1, 2, 4 (all at once)   step 1: 1 -> 3, 5; 2 -> 6   step 2: 3 -> 7
//
// Per rank: the same degrees as MPICH's tree (the root sends ceil(log2 N) D), other edges:
// rank 1 serves ranks 3 and 5 here, rank 2 serves rank 3 there.
// Limits: none (any N, count, root). No scratch.
#include "collscope/schedules.hpp"
#include "collscope/tree_steps.hpp"

namespace collscope::schedules {

Steps broadcast_binomial_strided(Plan& p) {
  const patterns::StaticTree tree{patterns::TreeShape::strided_binomial, p.size(), p.args().root};
  auto steps = detail::tree_broadcast_steps(p, tree, Plan::send(), Plan::recv(), p.count() * p.elem(), p.tag(), 0);
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
