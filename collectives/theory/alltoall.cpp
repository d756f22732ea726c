// Closed-form volume of the all-to-all and all-to-all-v algorithms, per peer
// (theory.hpp). count is per peer: one block = count elements.
#include "collscope/theory.hpp"
#include "common.hpp"

namespace collscope::theory {

using detail::Tally;

// One block to and from each other rank.
void alltoall_pairwise(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int q = 0; q < n; ++q)
    if (q != r) t.exchange(q, a.bytes(), 1);
}

// Step k = 0 .. N-2: one message of N-1-k blocks to r+1 and one from r-1.
void alltoall_ring(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int k = 0; k + 1 < n; ++k) {
    t.send((r + 1) % n, static_cast<std::uint64_t>(n - 1 - k) * a.bytes());
    t.recv((r + n - 1) % n, static_cast<std::uint64_t>(n - 1 - k) * a.bytes());
  }
}

// Step k: the blocks whose distance i < N has bit k set, to r+2^k and from r-2^k.
void alltoall_bruck(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int d = 1; d < n; d *= 2) {
    std::uint64_t blocks = 0;
    for (int i = 0; i < n; ++i) blocks += (i & d) ? 1 : 0;
    t.send((r + d) % n, blocks * a.bytes());
    t.recv(detail::wrap(r - d, n), blocks * a.bytes());
  }
}

// Row r of the split matrix out, column r in, the diagonal aside; one message per
// non-empty part. Without an N x N matrix there is no call (it is refused): nothing.
void alltoallv_pairwise(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  const std::size_t un = static_cast<std::size_t>(n);
  if (a.splits.size() != un * un) return;
  Tally t{pp};
  auto part = [&](int from, int to) {
    return a.splits[static_cast<std::size_t>(from) * un + static_cast<std::size_t>(to)] * a.elem_size();
  };
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    t.send(q, part(r, q));
    t.recv(q, part(q, r));
  }
}

// Round k (2^k < N): a signal to r+2^k and one from r-2^k; no bytes.
void barrier_dissemination(int r, int n, const CollArgs&, std::span<RankVolume> pp) {
  Tally t{pp};
  for (int d = 1; d < n; d *= 2) {
    t.signal_to((r + d) % n);
    t.signal_from(detail::wrap(r - d, n));
  }
}

}  // namespace collscope::theory
