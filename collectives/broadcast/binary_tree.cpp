// Binary-tree broadcast on Open MPI's binary tree (coll_tuned bcast algorithm 5,
// "binary_tree", unsegmented as its fixed decision runs it): the whole vector down the
// kary tree of fanout 2 (patterns/static_tree.hpp), whose levels interleave.
//
//   N = 7, root 0:        0            step 0: 0 -> 1, 0 -> 2
//                       1   2          step 1: 1 -> 3, 1 -> 5, 2 -> 4, 2 -> 6
//                      3 5 4 6
//
// Per rank: D from its parent, D to each of its (at most two) children; inner ranks send
// 2 D. Depth floor(log2 N). Not NCCL's binary tree (allreduce_tree): another shape.
// Limits: none (any N, count, root). No scratch.
#include "collscope/schedules.hpp"
#include "collscope/tree_steps.hpp"

namespace collscope::schedules {

Steps broadcast_binary_tree(Plan& p) {
  const patterns::StaticTree tree{patterns::TreeShape::kary, p.size(), p.args().root, 2};
  auto steps = detail::tree_broadcast_steps(p, tree, Plan::send(), Plan::recv(), p.count() * p.elem(), p.tag(), 0);
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
