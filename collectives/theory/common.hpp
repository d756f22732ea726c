// What the closed forms share: per-peer tallies and the arithmetic of blocks, powers of
// two and segments. Deliberately independent of collectives/patterns (only the block
// rule, which defines the collectives' layouts, is common): every structure the theory
// needs (trees, folds, rotations) is restated here from its definition, so a bug in a
// schedule's helper shows up as a mismatch instead of passing unseen.
#pragma once

#include <cstdint>
#include <span>

#include "collscope/coll_args.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/volume.hpp"

namespace collscope::theory::detail {

// Adds messages to the per-peer volumes; a data message of 0 bytes is never sent.
struct Tally {
  std::span<RankVolume> per_peer;
  void send(int peer, std::uint64_t bytes) { at(peer).send(bytes); }
  void recv(int peer, std::uint64_t bytes) { at(peer).recv(bytes); }
  void signal_to(int peer) { at(peer).signal_sent(); }
  void signal_from(int peer) { at(peer).signal_received(); }
  // `segments` messages carrying `bytes` in all, each way, with `peer`.
  void exchange(int peer, std::uint64_t bytes, std::uint64_t messages);
  RankVolume& at(int peer) { return per_peer[static_cast<std::size_t>(peer)]; }
};

inline int wrap(int a, int n) { return ((a % n) + n) % n; }
inline int lowest_bit(int v) { return v & -v; }
inline int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}
inline int pow2_at_most(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// Bytes of block i of the vector cut in nblocks, and of blocks [first, first + len).
std::uint64_t block_bytes(const CollArgs& a, int nblocks, int i);
std::uint64_t blocks_bytes(const CollArgs& a, int nblocks, int first, int len);

// Segments of --segment bytes (whole elements, at least one) over `elems` elements.
std::uint64_t segment_elems(const CollArgs& a);
std::uint64_t segments_of(const CollArgs& a, std::uint64_t elems);

// The fold that takes N ranks to a power of two p (recursive halving and doubling):
// ranks 2v and 2v+1 for v < N - p pair up, the odd one standing for both as virtual
// rank v; the others are virtual rank r - (N - p).
struct Fold {
  int p = 1, rem = 0;
  explicit Fold(int n) : p(pow2_at_most(n)), rem(n - pow2_at_most(n)) {}
  bool folded_out(int r) const { return r < 2 * rem && r % 2 == 0; }
  bool absorbs(int r) const { return r < 2 * rem && r % 2 == 1; }
  int virtual_of(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
  int real_of(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
};

// Bytes of the aligned group of `size` virtual blocks holding virtual block v, where
// virtual blocks are the p blocks of the vector (p_blocks) or the N real blocks grouped
// by the fold (folded).
std::uint64_t group_bytes_p_blocks(const CollArgs& a, const Fold& f, int v, int size);
std::uint64_t group_bytes_folded(const CollArgs& a, int n, const Fold& f, int v, int size);

}  // namespace collscope::theory::detail
