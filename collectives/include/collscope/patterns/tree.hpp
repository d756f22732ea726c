// Binary trees and the double binary tree, as pure functions.
//
// The binary tree is NCCL's (ncclGetBtree): an in-order tree over ranks 0..N-1 in which
// a rank's level is its lowest set bit. Rank 0 is the root and has a single child, the
// largest power of two below N. For N = 8:
//
//   level 8:  0            (root, one child)
//   level 4:  4            (parent 0)
//   level 2:  2     6      (parent 4)
//   level 1:  1 3   5 7    (parents 2 and 6)
//
// The second tree of the double binary tree follows NCCL's rule (ncclGetDtree): for
// odd N the first tree shifted by one rank (r -> r+1), for even N the first tree
// mirrored (r -> N-1-r). For even N the mirror turns odd ranks (leaves of tree 0) into
// inner nodes of tree 1, so every rank is interior in at most one tree.
#pragma once

#include <array>

namespace collscope::patterns {

struct TreeNode {
  int parent = -1;                   // -1 for the root
  std::array<int, 2> children{-1, -1};  // -1 where there is no child
  int num_children() const { return (children[0] >= 0) + (children[1] >= 0); }
};

// NCCL's binary tree, root 0.
TreeNode btree_node(int nranks, int rank);
// Tree `which` (0 or 1) of the double binary tree.
TreeNode dbt_node(int nranks, int rank, int which);
int dbt_root(int nranks, int which);
// A rank's depth in tree `which` of the double binary tree (the root: 0; tree 0 is the
// binary tree), and the depth of its deepest rank (both trees have the same shape).
int dbt_depth(int nranks, int rank, int which);
int btree_height(int nranks);

}  // namespace collscope::patterns
