#include "collscope/patterns/tree.hpp"

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {
namespace {

// A rank's level: its lowest set bit; for rank 0, the first power of two >= nranks.
int level_bit(int nranks, int rank) {
  int bit = 1;
  while (bit < nranks && (bit & rank) == 0) bit <<= 1;
  return bit;
}

// Maps every rank in `node` through f (parent and children alike).
template <class F>
TreeNode map_node(TreeNode node, F f) {
  if (node.parent >= 0) node.parent = f(node.parent);
  for (int& c : node.children)
    if (c >= 0) c = f(c);
  return node;
}

}  // namespace

TreeNode btree_node(int nranks, int rank) {
  TreeNode node;
  const int bit = level_bit(nranks, rank);
  if (rank == 0) {
    if (nranks > 1) node.children[1] = bit >> 1;
    return node;
  }
  // Parent: clear our level bit and set the next one up, unless that leaves the range.
  node.parent = (rank ^ bit) | (bit << 1);
  if (node.parent >= nranks) node.parent = rank ^ bit;

  int low = bit >> 1;
  if (low == 0) return node;          // a leaf (odd rank)
  node.children[0] = rank - low;      // always in range
  while (low > 0 && rank + low >= nranks) low >>= 1;
  if (low > 0) node.children[1] = rank + low;
  return node;
}

TreeNode dbt_node(int nranks, int rank, int which) {
  if (which == 0) return btree_node(nranks, rank);
  if (nranks % 2 == 1) {  // shift by one rank
    const TreeNode t = btree_node(nranks, mod(rank - 1, nranks));
    return map_node(t, [nranks](int r) { return mod(r + 1, nranks); });
  }
  const TreeNode t = btree_node(nranks, nranks - 1 - rank);  // mirror
  return map_node(t, [nranks](int r) { return nranks - 1 - r; });
}

int dbt_depth(int nranks, int rank, int which) {
  int depth = 0;
  for (int r = rank; (r = dbt_node(nranks, r, which).parent) >= 0;) ++depth;
  return depth;
}

// Rank 1 sits at the bottom of the chain 1, 2, 4, ..., the largest power of two below
// N, whose parent is the root: no rank is deeper (a rank's parent is at a higher level).
int btree_height(int nranks) { return nranks < 2 ? 0 : dbt_depth(nranks, 1, 0); }

int dbt_root(int nranks, int which) {
  if (which == 0) return 0;
  return nranks % 2 == 1 ? mod(1, nranks) : nranks - 1;
}

}  // namespace collscope::patterns
