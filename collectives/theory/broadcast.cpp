// Closed-form volume of the broadcast algorithms, per peer (theory.hpp).
#include "collscope/theory.hpp"
#include "common.hpp"
#include "rooted.hpp"

namespace collscope::theory {

using detail::Tally;

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
