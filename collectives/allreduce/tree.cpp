// Tree allreduce: reduce up NCCL's binary tree to rank 0, then broadcast back down,
// pipelined in segments of --segment bytes (default 1 MiB).
//
//   N = 8 (see patterns/tree.hpp):   0 - 4 - {2 - {1,3}, 6 - {5,7}}
//   reduce:    leaves send segment c up; an inner node adds its children's segment c
//              to its own and sends it on; rank 0 ends with the sum
//   broadcast: rank 0 sends segment c down; inner nodes forward it
//
// Per rank: (links) x the vector sent and received, where links = children + parent.
// A leaf moves 2 x datasize (send + receive), an inner node with two children and a
// parent 6 x: the seeds' "2 x datasize per worker" holds for leaves only.
// Limits: none (any N, any count).
#include "collscope/allreduce.hpp"
#include "collscope/patterns/tree.hpp"
#include "tree_pipeline.hpp"

namespace collscope {

void allreduce_tree(Comm& comm, const CollArgs& a) {
  const detail::TreeJob job{patterns::btree_node(comm.size(), comm.rank()), {0, a.count}, 4};
  detail::tree_reduce_broadcast(comm, a, {&job, 1});
}

}  // namespace collscope
