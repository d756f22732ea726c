// K-nomial-tree broadcast, radix 4 (Open MPI's coll_tuned bcast algorithm 7, "knomial",
// with its default coll_tuned_bcast_knomial_radix 4; unsegmented): a rank with a zero
// lowest base-4 digit serves the three ranks that differ from it in that digit alone,
// for every such digit below its own.
//
//   N = 8, root 0:   0 -> 4, 1, 2, 3     4 -> 5, 6, 7
//   step 0: 0 -> 4, 1, 2, 3   step 1: 4 -> 5, 6, 7
//
// Per rank: D from its parent, D to each child: the root sends 3 ceil(log4 N) D at most
// (N = 8: 4 D); depth ceil(log4 N). Open MPI's fixed decision takes it for 64 B .. 4 KiB
// (and below 8 B) at 8 <= N < 16.
// Limits: none (any N, count, root). No scratch.
#include "collscope/schedules.hpp"
#include "collscope/tree_steps.hpp"

namespace collscope::schedules {

Steps broadcast_knomial(Plan& p) {
  const patterns::StaticTree tree{patterns::TreeShape::knomial, p.size(), p.args().root, 4};
  auto steps = detail::tree_broadcast_steps(p, tree, Plan::send(), Plan::recv(), p.count() * p.elem(), p.tag(), 0);
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
