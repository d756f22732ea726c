// The fixed trees Open MPI's coll_tuned builds for its whole-vector broadcasts and
// reductions (ompi/mca/coll/base/coll_base_topo.c), as pure functions, beside MPICH's
// binomial tree (binomial.hpp). Ranks are renumbered v = (rank - root) mod N so that
// the root is virtual rank 0. Trees for N = 8:
//
//   kary, fanout k (Open MPI's "tree"; k = 2: its "binary tree"): levels of 1, k, k^2, ...
//     ranks in order; v on level L has the children v + i k^L, i = 1..k, so a level's
//     subtrees interleave:             0
//                                1           2
//                             3     5     4     6
//                             7
//   strided binomial (Open MPI's "bmtree", its broadcast's "binomial"): v's parent is v
//     less its highest set bit; its children are v + 2^j for every 2^j > v, nearest first:
//     0 -> 1, 2, 4;  1 -> 3, 5;  2 -> 6;  3 -> 7. The subtree of 1 is the odd ranks:
//     strided, where MPICH's binomial (binomial.hpp) has contiguous subtrees.
//   knomial, radix k (Open MPI's "kmtree"): v's parent is v rounded down to a multiple of
//     k^(j+1), for the smallest j where that changes v; its children v + i k^j, i = 1..k-1,
//     for every k^j below v's own digit position, farthest group first. k = 4:
//     0 -> 4, 1, 2, 3;  4 -> 5, 6, 7.
//   chain (Open MPI's "chain" with fanout 1, its "pipeline"): v -> v + 1.
//   star (Open MPI's "linear"): 0 -> every other rank.
//   binomial: MPICH's, as binomial.hpp (Open MPI's in-order bmtree, its reduce's
//     "binomial").
#pragma once

#include <vector>

namespace collscope::patterns {

enum class TreeShape { kary, strided_binomial, knomial, chain, star, binomial };

struct StaticTree {
  TreeShape shape = TreeShape::kary;
  int nranks = 1;
  int root = 0;
  int fanout = 2;  // kary: children per rank; knomial: the radix

  int to_virtual(int rank) const { return ((rank - root) % nranks + nranks) % nranks; }
  int to_real(int vrank) const { return (vrank + root) % nranks; }
  int parent(int vrank) const;               // -1 at the root
  std::vector<int> children(int vrank) const;  // in the order a broadcast sends
  int depth(int vrank) const;                // edges to the root
  int height() const;                        // the deepest rank's depth
};

}  // namespace collscope::patterns
