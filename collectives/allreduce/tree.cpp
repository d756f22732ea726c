// Tree allreduce: reduce up NCCL's binary tree to rank 0 and broadcast back down,
// pipelined in segments of --segment bytes (default 1 MiB), the way up and the way down
// at once (tree_pipeline.hpp).
//
//   N = 8 (patterns/tree.hpp):   0 - 4 - {2 - {1,3}, 6 - {5,7}}    depth 3
//   up:    leaves send segment c in step c; 2 and 6 add their children's segment c to
//          their own and send it on in step c+1; 4 in step c+2; 0 adds it in step c+2
//   down:  0 sends segment c in step c+3; 4 forwards it in step c+4; 2, 6 in step c+5
//
// Per rank: (links) x the vector sent and received, where links = children + parent.
// A leaf moves 2 x the vector (send + receive), an inner node with two children and a
// parent 6 x: the textbook "2 x the data per worker" holds for leaves only.
// Limits: none (any N, any count). Scratch: two segments per child.
#include "collscope/schedules.hpp"
#include "tree_pipeline.hpp"

namespace collscope::schedules {

Steps allreduce_tree(Plan& p) {
  const int n = p.size(), r = p.rank();
  const detail::TreeJob job{patterns::btree_node(n, r), patterns::dbt_depth(n, r, 0),
                            patterns::btree_height(n), {0, p.count()}};
  // job lives in this coroutine's frame, which outlives the inner schedule.
  auto inner = detail::pipelined_tree_allreduce(p, {&job, 1});
  while (inner.next()) co_yield inner.value();
}

}  // namespace collscope::schedules
