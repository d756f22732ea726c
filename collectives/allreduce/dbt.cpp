// Double binary tree allreduce (Sanders, Speck & Traeff 2009; NCCL's tree algorithm).
// Two binary trees run at once, each reducing and broadcasting half of the vector.
//
//   tree 0: NCCL's binary tree (patterns/tree.hpp), root 0
//   tree 1: tree 0 shifted by one rank (r -> r+1) when N is odd,
//           tree 0 mirrored (r -> N-1-r) when N is even
//   N = 4:  tree 0: 0 - 2 - {1, 3}      tree 1 (mirror): 3 - 1 - {2, 0}
//
// For even N the leaves of one tree (odd ranks) are the inner nodes of the other, so
// each rank's send and receive links are busy in one tree while idle in the other.
// Segments of --segment bytes pipeline each tree. Limits: none (any N, any count).
#include "collscope/allreduce.hpp"
#include "collscope/patterns/tree.hpp"
#include "tree_pipeline.hpp"

namespace collscope {

void allreduce_dbt(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const detail::TreeJob jobs[2] = {
      {patterns::dbt_node(n, r, 0), patterns::block_of(a.count, 2, 0), 6},
      {patterns::dbt_node(n, r, 1), patterns::block_of(a.count, 2, 1), 8},
  };
  detail::tree_reduce_broadcast(comm, a, jobs);
}

}  // namespace collscope
