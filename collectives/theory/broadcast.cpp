// Closed-form volume of the broadcast algorithms, per peer (theory.hpp).
#include "collscope/theory.hpp"
#include "common.hpp"
#include "rooted.hpp"
#include "trees.hpp"

namespace collscope::theory {

using detail::Tally;

namespace {

// The vector from the parent once, to each child once, down one of Open MPI's trees.
void down_tree(int r, const detail::OmpiTree& tree, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  const int v = tree.virtual_of(r);
  if (v != 0) t.recv(tree.real_of(tree.parent(v)), a.bytes());
  for (int c : tree.children(v)) t.send(tree.real_of(c), a.bytes());
}

}  // namespace

void broadcast_linear(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  down_tree(r, {detail::Shape::star, n, a.root}, a, pp);
}

void broadcast_binary_tree(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  down_tree(r, {detail::Shape::kary, n, a.root, 2}, a, pp);
}

void broadcast_binomial_strided(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  down_tree(r, {detail::Shape::strided_binomial, n, a.root}, a, pp);
}

void broadcast_knomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  down_tree(r, {detail::Shape::knomial, n, a.root, 4}, a, pp);
}

// Two halves (the first ceil(count / 2) elements and the rest), each down its side of the
// binary tree in segments (virtual ranks odd: the first half, even: the second; the root
// sends half 0 to child 1 and half 1 to child 2), then every rank swaps its half with its
// neighbour of the other side, whole: (1, 2), (3, 4), ...; with N even the root sends half
// 1 to the last rank instead of a neighbour. With a half empty (count <= 1) Open MPI
// broadcasts down the chain instead.
void broadcast_split_binary_tree(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  const std::uint64_t elem = a.elem_size(), count = a.count;
  const std::uint64_t half[2] = {count - count / 2, count / 2};
  if (half[0] == 0 || half[1] == 0) return broadcast_chain(r, n, a, pp);
  const std::uint64_t seg = detail::segment_elems(a);
  const detail::OmpiTree tree{detail::Shape::kary, n, a.root, 2};
  const int v = tree.virtual_of(r);
  auto side_of = [](int x) { return x % 2 == 1 ? 0 : 1; };
  auto edge = [&](RankVolume& cell, bool sending, int side) {
    const std::uint64_t bytes = half[side] * elem, msgs = (half[side] + seg - 1) / seg;
    (sending ? cell.sent_bytes : cell.recv_bytes) += bytes;
    (sending ? cell.sent_msgs : cell.recv_msgs) += msgs;
  };
  if (v != 0) edge(pp[static_cast<std::size_t>(tree.real_of(tree.parent(v)))], false, side_of(v));
  for (int c : tree.children(v)) edge(pp[static_cast<std::size_t>(tree.real_of(c))], true, side_of(c));
  Tally t{pp};
  if (n % 2 == 0 && (v == 0 || v == n - 1)) {  // the root's second half to the last rank
    if (v == 0) t.send(tree.real_of(n - 1), half[1] * elem);
    else t.recv(tree.real_of(0), half[1] * elem);
    return;
  }
  if (v == 0) return;
  const int pair = side_of(v) == 0 ? v + 1 : v - 1;
  t.send(tree.real_of(pair), half[side_of(v)] * elem);
  t.recv(tree.real_of(pair), half[1 - side_of(v)] * elem);
}

// The vector from the parent once, to each child once.
void broadcast_binomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  const detail::Binomial tree{n, a.root};
  const int v = tree.virtual_of(r);
  if (v != 0) t.recv(tree.real_of(tree.parent(v)), a.bytes());
  for (int c : tree.children(v)) t.send(tree.real_of(c), a.bytes());
}

// The vector from the previous rank of the chain root, root+1, ..., root-1 and to the
// next, one message per segment.
void broadcast_chain(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  const int v = detail::wrap(r - a.root, n);
  const std::uint64_t msgs = detail::segments_of(a, a.count);
  if (v > 0) {
    RankVolume& from = pp[static_cast<std::size_t>((r + n - 1) % n)];
    from.recv_bytes += a.bytes();
    from.recv_msgs += msgs;
  }
  if (v + 1 < n) {
    RankVolume& to = pp[static_cast<std::size_t>((r + 1) % n)];
    to.sent_bytes += a.bytes();
    to.sent_msgs += msgs;
  }
}

// Binomial scatter of the blocks (a subtree whose real ranks wrap past N-1 as two
// pieces), then the ring allgather.
void broadcast_scatter_allgather(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  const detail::Binomial tree{n, a.root};
  const int v = tree.virtual_of(r);
  if (v != 0)
    for (std::uint64_t piece : tree.run_pieces(a, v, tree.subtree_size(v)))
      t.recv(tree.real_of(tree.parent(v)), piece);
  for (int c : tree.children(v))
    for (std::uint64_t piece : tree.run_pieces(a, c, tree.subtree_size(c)))
      t.send(tree.real_of(c), piece);
  allgather_ring(r, n, a, pp);
}

}  // namespace collscope::theory
