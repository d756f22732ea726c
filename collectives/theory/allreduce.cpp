// Closed-form volume of the allreduce algorithms, per peer (theory.hpp).
#include <vector>

#include "collscope/theory.hpp"
#include "common.hpp"

namespace collscope::theory {
namespace {

using detail::Tally;

// NCCL's binary tree (ncclGetBtree), restated: rank r != 0 sits at the level of its
// lowest set bit b; its parent is r with b cleared and the next bit set, or with b
// cleared alone when that is past the last rank. Rank 0 is the root.
int btree_parent(int n, int r) {
  if (r == 0) return -1;
  const int b = detail::lowest_bit(r);
  const int up = (r ^ b) | (b << 1);
  return up < n ? up : r ^ b;
}

// The double binary tree's second tree is the first one with every rank renamed:
// shifted by one when N is odd, mirrored when N is even.
int dbt_rename(int n, int r) { return n % 2 == 1 ? (r + 1) % n : n - 1 - r; }

// The tree neighbours of r in tree `which` (0: the binary tree, 1: its renaming).
std::vector<int> tree_neighbours(int n, int r, int which) {
  auto parent = [&](int x) {
    if (which == 0) return btree_parent(n, x);
    const int back = n % 2 == 1 ? (x + n - 1) % n : n - 1 - x;  // the inverse renaming
    const int p = btree_parent(n, back);
    return p < 0 ? -1 : dbt_rename(n, p);
  };
  std::vector<int> out;
  if (parent(r) >= 0) out.push_back(parent(r));
  for (int q = 0; q < n; ++q)
    if (q != r && parent(q) == r) out.push_back(q);
  return out;
}

// A tree link carries its part of `elems` elements once up and once down, in segments:
// each side sends it once and receives it once.
void tree_link(Tally& t, const CollArgs& a, int peer, std::uint64_t elems) {
  t.exchange(peer, elems * a.elem_size(), detail::segments_of(a, elems));
}

}  // namespace

// Reduce-scatter: every block but r+1 to r+1, every block but r from r-1.
// Allgather: every block but r+2 to r+1, every block but r+1 from r-1.
void allreduce_ring(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int b = 0; b < n; ++b) {
    if (b != (r + 1) % n) t.send(next, detail::block_bytes(a, n, b));
    if (b != (r + 2) % n) t.send(next, detail::block_bytes(a, n, b));
    if (b != r) t.recv(prev, detail::block_bytes(a, n, b));
    if (b != (r + 1) % n) t.recv(prev, detail::block_bytes(a, n, b));
  }
}

// The whole vector to and from every other rank.
void allreduce_direct(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int q = 0; q < n; ++q)
    if (q != r) t.exchange(q, a.bytes(), 1);
}

// Per link of the tree: the vector up and down, ceil(count / segment) messages each.
void allreduce_tree(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int q : tree_neighbours(n, r, 0)) tree_link(t, a, q, a.count);
}

// Half of the vector (the first count - count/2 elements on tree 0, the rest on tree 1)
// through each tree, as in the tree.
void allreduce_dbt(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  const std::uint64_t half[2] = {a.count - a.count / 2, a.count / 2};
  for (int which = 0; which < 2; ++which)
    for (int q : tree_neighbours(n, r, which)) tree_link(t, a, q, half[which]);
}

// The fold's whole vector each way between 2v and 2v+1; then, among the p virtual
// ranks, at distance d = p/2 .. 1 the aligned group of d of the p blocks holding the
// partner's virtual rank goes out and the one holding our own comes in (halving), and
// back again at d = 1 .. p/2 (doubling).
void allreduce_halving_doubling(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  const detail::Fold f(n);
  if (f.folded_out(r) || f.absorbs(r)) t.exchange(f.folded_out(r) ? r + 1 : r - 1, a.bytes(), 1);
  if (f.folded_out(r)) return;
  const int v = f.virtual_of(r);
  for (int d = 1; d < f.p; d *= 2) {
    const int peer = f.real_of(v ^ d);
    for (int pass = 0; pass < 2; ++pass) {  // the halving, then the doubling
      t.send(peer, detail::group_bytes_p_blocks(a, f, pass == 0 ? v ^ d : v, d));
      t.recv(peer, detail::group_bytes_p_blocks(a, f, pass == 0 ? v : v ^ d, d));
    }
  }
}

}  // namespace collscope::theory
