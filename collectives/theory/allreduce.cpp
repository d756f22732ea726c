// Closed-form volume of the allreduce algorithms, per peer (theory.hpp).
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "collscope/theory.hpp"
#include "common.hpp"
#include "rooted.hpp"
#include "trees.hpp"

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

// The segmented ring's phases, restated from Open MPI's rule: the segment in whole
// elements s (rounded to the nearest; the whole vector unless it holds at least one
// element and less than the vector); P = count / (N s), one more when the rest is at
// least N and above N s / 2; 1 (the plain ring) when count < N s.
std::uint64_t ring_phases(const CollArgs& a, int n) {
  const std::uint64_t elem = a.elem_size(), count = a.count;
  std::uint64_t s = count;
  if (a.segment_bytes >= elem && a.segment_bytes < elem * count) {
    s = a.segment_bytes / elem;
    if (a.segment_bytes - s * elem > elem / 2) ++s;
  }
  const std::uint64_t whole = static_cast<std::uint64_t>(n) * s;
  if (count == 0 || count < whole) return 1;
  const std::uint64_t rest = count % whole;
  return count / whole + (rest >= static_cast<std::uint64_t>(n) && rest > whole / 2 ? 1 : 0);
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

// The ring's bytes; in the reduce-scatter each block goes as its P parts (the non-empty
// ones: min(P, elements) messages), in the allgather whole.
void allreduce_segmented_ring(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  const std::uint64_t phases = ring_phases(a, n);
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  RankVolume& to = pp[static_cast<std::size_t>(next)];
  RankVolume& from = pp[static_cast<std::size_t>(prev)];
  for (int b = 0; b < n; ++b) {
    const std::uint64_t bytes = detail::block_bytes(a, n, b);
    const std::uint64_t parts = std::min<std::uint64_t>(phases, bytes / a.elem_size());
    if (bytes == 0) continue;
    if (b != (r + 1) % n) to.sent_bytes += bytes, to.sent_msgs += parts;   // reduce-scatter
    if (b != r) from.recv_bytes += bytes, from.recv_msgs += parts;
    if (b != (r + 2) % n) to.sent_bytes += bytes, to.sent_msgs += 1;       // allgather
    if (b != (r + 1) % n) from.recv_bytes += bytes, from.recv_msgs += 1;
  }
}

// The vector up the binomial tree to rank 0 (rooted.hpp), then down Open MPI's strided
// binomial tree from rank 0: once per edge each way.
void allreduce_nonoverlapping(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  const detail::Binomial up{n, 0};
  for (int c : up.children(r)) t.recv(c, a.bytes());
  if (r != 0) t.send(up.parent(r), a.bytes());
  const detail::OmpiTree down{detail::Shape::strided_binomial, n, 0};
  if (r != 0) t.recv(down.parent(r), a.bytes());
  for (int c : down.children(r)) t.send(c, a.bytes());
}

// Open MPI's Rabenseifner, restated. The fold: among ranks below 2 rem (rem = N - p), the
// even one keeps the first count/2 elements and the odd one the rest: they swap halves,
// the odd one sends its reduced second half back and sits out, and gets the whole result
// at the end. The p remaining ranks (virtual v: 2v below rem, else v + rem) halve a window
// of elements at distances 1, 2, ..., p/2: the lower rank of a pair keeps the window's
// first floor(w/2) elements and sends the rest, the upper one keeps the rest; then the
// same exchanges in reverse order, each rank sending what it kept.
void allreduce_rabenseifner(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  const std::uint64_t e = a.elem_size(), lhalf = a.count / 2, rhalf = a.count - a.count / 2;
  const int p = detail::pow2_at_most(n), rem = n - p;
  if (r < 2 * rem && r % 2 == 1) {
    t.send(r - 1, lhalf * e);
    t.recv(r - 1, rhalf * e);
    t.send(r - 1, rhalf * e);
    t.recv(r - 1, a.bytes());
    return;
  }
  if (r < 2 * rem) {
    t.send(r + 1, rhalf * e);
    t.recv(r + 1, lhalf * e);
    t.recv(r + 1, rhalf * e);
    t.send(r + 1, a.bytes());
  }
  const int v = r < 2 * rem ? r / 2 : r - rem;
  std::uint64_t window = a.count;
  std::vector<std::pair<int, std::array<std::uint64_t, 2>>> exchanges;  // peer, {sent, kept}
  for (int d = 1; d < p; d *= 2) {
    const int vpeer = v ^ d, peer = vpeer < rem ? 2 * vpeer : vpeer + rem;
    const std::uint64_t kept = v < vpeer ? window / 2 : window - window / 2;
    exchanges.push_back({peer, {window - kept, kept}});
    window = kept;
  }
  for (const auto& [peer, sizes] : exchanges) {  // halving: send the other part, keep ours
    t.send(peer, sizes[0] * e);
    t.recv(peer, sizes[1] * e);
  }
  for (const auto& [peer, sizes] : exchanges) {  // doubling, in reverse: the same sizes swapped
    t.send(peer, sizes[1] * e);
    t.recv(peer, sizes[0] * e);
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

// The fold's whole vector each way between 2v and 2v+1 (in, and the result back out);
// then, among the p virtual ranks, the whole vector each way with v ^ d for d = 1 .. p/2.
void allreduce_recursive_doubling(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  const detail::Fold f(n);
  if (f.folded_out(r) || f.absorbs(r)) t.exchange(f.folded_out(r) ? r + 1 : r - 1, a.bytes(), 1);
  if (f.folded_out(r)) return;
  for (int d = 1; d < f.p; d *= 2) t.exchange(f.real_of(f.virtual_of(r) ^ d), a.bytes(), 1);
}

}  // namespace collscope::theory
