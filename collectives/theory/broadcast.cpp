// Exact volume of each broadcast algorithm: bytes and messages one rank sends and
// receives in one call, for any N, count, root and segment size, from the schedule
// alone. A zero-byte message is never sent or counted.
#include "collscope/allgather.hpp"
#include "collscope/broadcast.hpp"
#include "collscope/patterns/binomial.hpp"

namespace collscope {
namespace {

// One message per non-empty real-rank piece of a virtual run (scatter_allgather).
template <class Count>
void count_pieces(const CollArgs& a, int n, patterns::RankRun sub, Count count) {
  for (const patterns::RankRun& run : patterns::real_runs(n, a.root, sub))
    count(patterns::run_block(a.count, n, run).count * a.elem_size());
}

}  // namespace

// The vector from the parent once, to each child once.
RankVolume broadcast_binomial_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  const int vr = patterns::to_virtual(r, a.root, n);
  if (vr != 0) v.recv(a.bytes());
  for (std::size_t c = 0; c < patterns::binomial_children(n, vr).size(); ++c) v.send(a.bytes());
  return v;
}

// The vector in from the previous rank and out to the next, one message per segment.
RankVolume broadcast_chain_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  const std::size_t elem = a.elem_size();
  const std::size_t seg = patterns::segment_elems(a.segment_bytes, elem);
  for (std::size_t c = 0; c < patterns::num_segments(a.count, seg); ++c) {
    const std::uint64_t bytes = patterns::segment_of(a.count, seg, c).count * elem;
    if (patterns::chain_prev(r, a.root, n) >= 0) v.recv(bytes);
    if (patterns::chain_next(r, a.root, n) >= 0) v.send(bytes);
  }
  return v;
}

// Binomial scatter of the blocks (a wrapped subtree as two pieces), then the ring.
RankVolume broadcast_scatter_allgather_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  const int vr = patterns::to_virtual(r, a.root, n);
  if (vr != 0)
    count_pieces(a, n, patterns::binomial_subtree(n, vr), [&](std::uint64_t b) { v.recv(b); });
  for (int c : patterns::binomial_children(n, vr))
    count_pieces(a, n, patterns::binomial_subtree(n, c), [&](std::uint64_t b) { v.send(b); });
  v += allgather_ring_theory(r, n, a);
  return v;
}

}  // namespace collscope
