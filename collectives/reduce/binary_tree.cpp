// Binary-tree reduce on Open MPI's binary tree (coll_tuned reduce algorithm 4, "binary",
// unsegmented): the vector up the kary tree of fanout 2 (patterns/static_tree.hpp),
// whose levels interleave; each inner rank adds its children's to its own.
//
//   N = 7, root 0:        0            step 0: 3 -> 1, 5 -> 1, 4 -> 2, 6 -> 2
//                       1   2          step 1: 1 -> 0, 2 -> 0
//                      3 5 4 6
//
// Per rank: D to its parent, D from each child. Open MPI's fixed decision takes it below
// 4 KiB at 4 <= N < 8 and below 8 KiB at 8 <= N < 16. Not collscope's reduce_binomial:
// N = 4 here is 1 -> 0, 2 -> 0, 3 -> 1, there 3 -> 2.
// Limits: commutative ops. Scratch: the children's vectors and the partial sum.
#include "collscope/schedules.hpp"
#include "tree_reduce.hpp"

namespace collscope::schedules {

Steps reduce_binary_tree(Plan& p) {
  auto steps = detail::reduce_on_tree(p, {patterns::TreeShape::kary, p.size(), p.args().root, 2});
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
