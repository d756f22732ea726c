// Closed-form volume of the allgather algorithms, per peer (theory.hpp).
#include <algorithm>

#include "collscope/theory.hpp"
#include "common.hpp"

namespace collscope::theory {
namespace {

using detail::Tally;

// Everything but block b, as the bytes before it and the bytes after it.
void around_block(const CollArgs& a, int n, int b, std::uint64_t& before, std::uint64_t& after) {
  before = detail::blocks_bytes(a, n, 0, b);
  after = detail::blocks_bytes(a, n, b + 1, n - b - 1);
}

}  // namespace

// Every block but r+1 to r+1, every block but its own from r-1.
void allgather_ring(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  for (int b = 0; b < n; ++b) {
    if (b != (r + 1) % n) t.send((r + 1) % n, detail::block_bytes(a, n, b));
    if (b != r) t.recv((r + n - 1) % n, detail::block_bytes(a, n, b));
  }
}

// Folded-out rank 2v: its block to 2v+1, then the rest back in two messages (before and
// after its block). Virtual ranks, at d = 1 .. p/2: the aligned group of d virtual
// blocks holding our own out, the partner's in.
void allgather_recursive_doubling(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n == 1) return;
  Tally t{pp};
  const detail::Fold f(n);
  std::uint64_t before = 0, after = 0;
  if (f.folded_out(r)) {
    around_block(a, n, r, before, after);
    t.send(r + 1, detail::block_bytes(a, n, r));
    t.recv(r + 1, before);
    t.recv(r + 1, after);
    return;
  }
  if (f.absorbs(r)) {
    around_block(a, n, r - 1, before, after);
    t.recv(r - 1, detail::block_bytes(a, n, r - 1));
    t.send(r - 1, before);
    t.send(r - 1, after);
  }
  const int v = f.virtual_of(r);
  for (int d = 1; d < f.p; d *= 2) {
    const int peer = f.real_of(v ^ d);
    t.send(peer, detail::group_bytes_folded(a, n, f, v, d));
    t.recv(peer, detail::group_bytes_folded(a, n, f, v ^ d, d));
  }
}

// Step k (d = 2^k, m = min(d, N-d) blocks): blocks r .. r+m-1 to r-d, blocks
// r+d .. r+d+m-1 from r+d (indices mod N).
void allgather_bruck(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int d = 1; d < n; d *= 2) {
    const int m = std::min(d, n - d);
    std::uint64_t out = 0, in = 0;
    for (int i = 0; i < m; ++i) {
      out += detail::block_bytes(a, n, (r + i) % n);
      in += detail::block_bytes(a, n, (r + d + i) % n);
    }
    t.send(detail::wrap(r - d, n), out);
    t.recv((r + d) % n, in);
  }
}

// Even N: its own block with neighbour 0 (r+1 for even r, r-1 for odd r); then, in steps
// 1 .. N/2 - 1 alternating neighbour 1 and neighbour 0, the pair of blocks {2j, 2j+1} it
// received in the step before (at first its own pair) out, and the next pair in: two
// blocks further along on that neighbour's side. Odd N: Open MPI's ring.
void allgather_neighbor_exchange(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  if (n % 2 == 1) return allgather_ring(r, n, a, pp);
  Tally t{pp};
  const bool even = r % 2 == 0;
  const int side[2] = {detail::wrap(even ? r + 1 : r - 1, n), detail::wrap(even ? r - 1 : r + 1, n)};
  const int step[2] = {even ? 2 : -2, even ? -2 : 2};
  t.send(side[0], detail::block_bytes(a, n, r));
  t.recv(side[0], detail::block_bytes(a, n, side[0]));
  int held = r - r % 2, next[2] = {held, held};
  for (int i = 1; i < n / 2; ++i) {
    const int s = i % 2;
    next[s] = detail::wrap(next[s] + step[s], n);
    t.send(side[s], detail::blocks_bytes(a, n, held, 2));
    t.recv(side[s], detail::blocks_bytes(a, n, next[s], 2));
    held = next[s];
  }
}

}  // namespace collscope::theory
