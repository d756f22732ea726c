#include "common.hpp"

#include <algorithm>
#include <vector>

#include "collscope/theory.hpp"

namespace collscope::theory::detail {

void Tally::exchange(int peer, std::uint64_t bytes, std::uint64_t messages) {
  RankVolume& v = at(peer);
  if (bytes == 0) return;
  v.sent_bytes += bytes;
  v.recv_bytes += bytes;
  v.sent_msgs += messages;
  v.recv_msgs += messages;
}

std::uint64_t block_bytes(const CollArgs& a, int nblocks, int i) {
  return patterns::block_of(a.count, nblocks, i).count * a.elem_size();
}

std::uint64_t blocks_bytes(const CollArgs& a, int nblocks, int first, int len) {
  return patterns::block_range(a.count, nblocks, first, len).count * a.elem_size();
}

std::uint64_t segment_elems(const CollArgs& a) {
  return std::max<std::uint64_t>(1, a.segment_bytes / a.elem_size());
}

std::uint64_t segments_of(const CollArgs& a, std::uint64_t elems) {
  const std::uint64_t seg = segment_elems(a);
  return (elems + seg - 1) / seg;
}

std::uint64_t group_bytes_p_blocks(const CollArgs& a, const Fold& f, int v, int size) {
  return blocks_bytes(a, f.p, v - v % size, size);
}

// Virtual block i is real blocks 2i, 2i+1 (i < rem) or i + rem: a group of virtual
// blocks is one contiguous run of real blocks.
std::uint64_t group_bytes_folded(const CollArgs& a, int n, const Fold& f, int v, int size) {
  auto first_real = [&](int i) { return i < f.rem ? 2 * i : i + f.rem; };
  const int lo = first_real(v - v % size), hi = first_real(v - v % size + size);
  return blocks_bytes(a, n, lo, hi - lo);
}

}  // namespace collscope::theory::detail

namespace collscope {

std::vector<RankVolume> theory_per_peer(TheoryFn f, int rank, int nranks, const CollArgs& a) {
  std::vector<RankVolume> v(static_cast<std::size_t>(nranks));
  f(rank, nranks, a, v);
  return v;
}

RankVolume theory_total(TheoryFn f, int rank, int nranks, const CollArgs& a) {
  RankVolume t;
  for (const RankVolume& v : theory_per_peer(f, rank, nranks, a)) t += v;
  return t;
}

}  // namespace collscope
