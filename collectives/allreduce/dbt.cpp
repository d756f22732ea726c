// Double binary tree allreduce (Sanders, Speck & Traeff 2009; NCCL's tree algorithm).
// Two binary trees run at once, each reducing and broadcasting half of the vector,
// pipelined in segments (tree_pipeline.hpp).
//
//   tree 0: NCCL's binary tree (patterns/tree.hpp), root 0
//   tree 1: tree 0 shifted by one rank (r -> r+1) when N is odd,
//           tree 0 mirrored (r -> N-1-r) when N is even
//   N = 4:  tree 0: 0 - 2 - {1, 3}      tree 1 (mirror): 3 - 1 - {2, 0}
//
// For even N the leaves of one tree (odd ranks) are the inner nodes of the other, so
// each rank's send and receive links are busy in one tree while idle in the other.
// Limits: none (any N, any count). Scratch: two segments per child in each tree.
#include "collscope/schedules.hpp"
#include "tree_pipeline.hpp"

namespace collscope::schedules {

Steps allreduce_dbt(Plan& p) {
  const int n = p.size(), r = p.rank();
  const int height = patterns::btree_height(n);
  const detail::TreeJob jobs[2] = {
      {patterns::dbt_node(n, r, 0), patterns::dbt_depth(n, r, 0), height,
       patterns::block_of(p.count(), 2, 0)},
      {patterns::dbt_node(n, r, 1), patterns::dbt_depth(n, r, 1), height,
       patterns::block_of(p.count(), 2, 1)},
  };
  auto inner = detail::pipelined_tree_allreduce(p, jobs);
  while (inner.next()) co_yield inner.value();
}

}  // namespace collscope::schedules
