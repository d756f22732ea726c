// Closed-form volume of the reduce algorithms, per peer (theory.hpp).
#include "collscope/theory.hpp"
#include "common.hpp"
#include "rooted.hpp"
#include "trees.hpp"

namespace collscope::theory {
namespace {

// The vector up each tree edge, in `msgs` messages: once from every child, once to the
// parent.
void binomial_up(int r, int n, const CollArgs& a, std::span<RankVolume> pp, std::uint64_t msgs) {
  if (a.bytes() == 0) return;
  const detail::Binomial tree{n, a.root};
  const int v = tree.virtual_of(r);
  for (int c : tree.children(v)) {
    RankVolume& from = pp[static_cast<std::size_t>(tree.real_of(c))];
    from.recv_bytes += a.bytes();
    from.recv_msgs += msgs;
  }
  if (v != 0) {
    RankVolume& to = pp[static_cast<std::size_t>(tree.real_of(tree.parent(v)))];
    to.sent_bytes += a.bytes();
    to.sent_msgs += msgs;
  }
}

// The vector up one of Open MPI's trees: once from every child, once to the parent.
void up_tree(int r, const detail::OmpiTree& tree, const CollArgs& a, std::span<RankVolume> pp) {
  detail::Tally t{pp};
  const int v = tree.virtual_of(r);
  for (int c : tree.children(v)) t.recv(tree.real_of(c), a.bytes());
  if (v != 0) t.send(tree.real_of(tree.parent(v)), a.bytes());
}

}  // namespace

void reduce_linear(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  up_tree(r, {detail::Shape::star, n, a.root}, a, pp);
}

void reduce_chain(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  up_tree(r, {detail::Shape::chain, n, a.root}, a, pp);
}

void reduce_binary_tree(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  up_tree(r, {detail::Shape::kary, n, a.root, 2}, a, pp);
}

void reduce_binomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  binomial_up(r, n, a, pp, 1);
}

void reduce_pipelined(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  binomial_up(r, n, a, pp, detail::segments_of(a, a.count));
}

// Rabenseifner's reduce, restated: ranks renumbered rel = (r - root - 1) mod N (the root
// is rel N - 1, never folded out); the fold takes rel 2v to rel 2v+1 for v < N - p (the
// whole vector, one way); virtual rank v then exchanges with v ^ d at every d < p the
// aligned group of d of the p blocks holding v ^ d (out) and v (in), as in the
// allreduce's halving. The gather is a binomial tree toward virtual rank p - 1 (all
// ones): v != p - 1 sends at d = its lowest zero bit the aligned group of d blocks
// holding v, to v + d, after receiving at every smaller d' (bits of v that are set)
// the group of d' blocks holding v - d' from v - d'.
void reduce_rabenseifner(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  detail::Tally t{pp};
  const detail::Fold f(n);
  const int shift = a.root + 1;
  auto real = [&](int rel) { return detail::wrap(rel + shift, n); };
  const int rel = detail::wrap(r - shift, n);
  if (f.folded_out(rel)) {
    t.send(real(rel + 1), a.bytes());
    return;
  }
  if (f.absorbs(rel)) t.recv(real(rel - 1), a.bytes());
  const int v = f.virtual_of(rel);
  for (int d = 1; d < f.p; d *= 2) {
    const int peer = real(f.real_of(v ^ d));
    t.send(peer, detail::group_bytes_p_blocks(a, f, v ^ d, d));
    t.recv(peer, detail::group_bytes_p_blocks(a, f, v, d));
  }
  for (int d = 1; d < f.p; d *= 2) {
    if ((v & d) == 0) {  // the lowest zero bit: send and stop
      t.send(real(f.real_of(v + d)), detail::group_bytes_p_blocks(a, f, v, d));
      break;
    }
    t.recv(real(f.real_of(v - d)), detail::group_bytes_p_blocks(a, f, v - d, d));
  }
}

}  // namespace collscope::theory
