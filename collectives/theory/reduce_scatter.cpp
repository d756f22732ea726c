// Closed-form volume of the reduce-scatter algorithms, per peer (theory.hpp).
#include "collscope/theory.hpp"
#include "common.hpp"

namespace collscope::theory {

using detail::Tally;

// Every block but its own to r+1, every block but r-1 from r-1.
void reduce_scatter_ring(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  for (int b = 0; b < n; ++b) {
    if (b != r) t.send((r + 1) % n, detail::block_bytes(a, n, b));
    if (b != (r + n - 1) % n) t.recv((r + n - 1) % n, detail::block_bytes(a, n, b));
  }
}

// Folded pair (2v, 2v+1): the whole vector up, block 2v back. Virtual ranks: at d =
// p/2 .. 1 the aligned group of d virtual blocks holding the partner out, our own in.
void reduce_scatter_halving(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  const detail::Fold f(n);
  if (f.folded_out(r)) {
    t.send(r + 1, a.bytes());
    t.recv(r + 1, detail::block_bytes(a, n, r));
    return;
  }
  if (f.absorbs(r)) {
    t.recv(r - 1, a.bytes());
    t.send(r - 1, detail::block_bytes(a, n, r - 1));
  }
  const int v = f.virtual_of(r);
  for (int d = f.p / 2; d >= 1; d /= 2) {
    const int peer = f.real_of(v ^ d);
    t.send(peer, detail::group_bytes_folded(a, n, f, v ^ d, d));
    t.recv(peer, detail::group_bytes_folded(a, n, f, v, d));
  }
}

}  // namespace collscope::theory
