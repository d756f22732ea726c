// Pipelined chain broadcast (Open MPI's "pipeline"/"chain" with one chain; the classic
// store-and-forward pipeline). The vector is cut into segments of --segment bytes
// (rounded down to whole elements, at least one); segment c leaves the root, and every
// rank forwards segment c to the next one as soon as it has it, while the segments
// before it travel further down the chain.
//
//   N = 4, root 1, 3 segments:   chain 1 -> 2 -> 3 -> 0 (positions 0 1 2 3)
//     step 0: 1 -s0-> 2
//     step 1: 1 -s1-> 2 -s0-> 3
//     step 2: 1 -s2-> 2 -s1-> 3 -s0-> 0
//     ...     the rank at position v receives segment c in step c+v-1, sends it in c+v
//
// Per rank: receives the vector once (not the root) and sends it once (not the last
// rank), each in ceil(count / segment) messages. Limits: none (any N, count, root); the
// latency grows with N, so it wins at large sizes and few ranks.
#include "collscope/patterns/binomial.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::Block;

Steps broadcast_chain(Plan& p) {
  const int n = p.size(), r = p.rank(), root = p.args().root;
  const int prev = patterns::chain_prev(r, root, n), next = patterns::chain_next(r, root, n);
  const int v = patterns::to_virtual(r, root, n);
  const std::size_t seg = patterns::segment_elems(p.args().segment_bytes, p.elem());
  const long segments = static_cast<long>(patterns::num_segments(p.count(), seg));
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  // The root sends from its send buffer and copies it into its receive buffer while
  // the first segment travels.
  const Region from = prev < 0 ? Region::send : Region::recv;
  if (prev < 0) s.copy(Plan::recv(), Plan::send(), p.count() * p.elem());
  for (long t = v > 0 ? v - 1 : 0; t < segments + v; ++t) {
    const long in = t - (v - 1), out = t - v;  // the segments received and sent in step t
    if (prev >= 0 && in >= 0 && in < segments) {
      const Block b = patterns::segment_of(p.count(), seg, static_cast<std::size_t>(in));
      s.recv(prev, p.recv_at(b), p.bytes(b), tag);
    }
    if (next >= 0 && out >= 0 && out < segments) {
      const Block b = patterns::segment_of(p.count(), seg, static_cast<std::size_t>(out));
      s.send(next, BufRef{from, 0, b.offset * p.elem()}, p.bytes(b), tag);
    }
    co_yield s.step("segment", static_cast<int>(t));
  }
}

}  // namespace collscope::schedules
