// Closed-form volume of the gather and scatter algorithms, per peer (theory.hpp). A
// scatter moves exactly what the gather of the same shape moves, the other way.
#include "collscope/theory.hpp"
#include "common.hpp"
#include "rooted.hpp"

namespace collscope::theory {
namespace {

using detail::Tally;

// Every other rank's block between it and the root, one message each. `to_root`: gather.
void linear(int r, int n, const CollArgs& a, std::span<RankVolume> pp, bool to_root) {
  Tally t{pp};
  for (int q = 0; q < n; ++q) {
    if (q == a.root || (r != a.root && q != r)) continue;
    const int peer = r == a.root ? q : a.root;
    const std::uint64_t bytes = detail::block_bytes(a, n, q);
    if (to_root == (r != a.root)) t.send(peer, bytes);
    else t.recv(peer, bytes);
  }
}

// One message per tree edge, carrying the child's whole subtree's blocks.
void binomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp, bool to_root) {
  Tally t{pp};
  const detail::Binomial tree{n, a.root};
  const int v = tree.virtual_of(r);
  for (int c : tree.children(v)) {
    const std::uint64_t bytes = tree.run_bytes(a, c, tree.subtree_size(c));
    if (to_root) t.recv(tree.real_of(c), bytes);
    else t.send(tree.real_of(c), bytes);
  }
  if (v == 0) return;
  const std::uint64_t mine = tree.run_bytes(a, v, tree.subtree_size(v));
  if (to_root) t.send(tree.real_of(tree.parent(v)), mine);
  else t.recv(tree.real_of(tree.parent(v)), mine);
}

}  // namespace

void gather_linear(int r, int n, const CollArgs& a, std::span<RankVolume> pp) { linear(r, n, a, pp, true); }
void gather_binomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp) { binomial(r, n, a, pp, true); }
void scatter_linear(int r, int n, const CollArgs& a, std::span<RankVolume> pp) { linear(r, n, a, pp, false); }
void scatter_binomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp) { binomial(r, n, a, pp, false); }

}  // namespace collscope::theory
