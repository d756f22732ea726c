// Segmented ring allreduce (Open MPI's coll_tuned allreduce algorithm 5,
// "segmented_ring", ompi_coll_base_allreduce_intra_ring_segmented): the ring's
// reduce-scatter run P times, phase p over part p of every block, then one ring
// allgather of whole blocks. Smaller messages keep the pipeline of a long ring busy.
//
//   N = 3, blocks A B C, P = 2 phases (A = A0 A1, ...):
//   phase 0, steps 0-1:  the ring reduce-scatter over A0 B0 C0
//   phase 1, steps 2-3:  the same over A1 B1 C1   -> rank r owns block r+1, reduced
//   steps 4-5:           ring allgather of A, B, C
//
// Segments as Open MPI computes them from its segment size (here --segment): s elements
// (the segment in whole elements, rounded to the nearest); P = count / (N s), one more
// when the rest is at least N and more than N s / 2; each block is cut into P parts by
// the uneven rule. When count < N s (a segment at least a block: with Open MPI's default
// segment size 0, always) it is the plain ring, message for message.
//
// Per rank: the ring's bytes, 2(N-1)/N of the vector with even blocks, in P(N-1) + N-1
// messages (N-1 more per phase). Limits: none (any N and count). Scratch: one part.
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

using patterns::Block;
using patterns::block_of;

// Open MPI's segment in elements (COLL_BASE_COMPUTED_SEGCOUNT): the whole vector unless
// the segment holds at least one element and less than the vector.
std::size_t segment_elems(std::size_t segment_bytes, std::size_t elem, std::size_t count) {
  if (segment_bytes < elem || segment_bytes >= elem * count) return count;
  std::size_t s = segment_bytes / elem;
  if (segment_bytes - s * elem > elem / 2) ++s;
  return s;
}

// The phases of the reduce-scatter; 1 is the plain ring.
std::size_t phases(std::size_t count, int n, std::size_t seg) {
  const std::size_t whole = static_cast<std::size_t>(n) * seg;
  if (count == 0 || count < whole) return 1;
  const std::size_t rest = count % whole;
  return count / whole + (rest >= static_cast<std::size_t>(n) && rest > whole / 2 ? 1 : 0);
}

// Part `phase` of block `b`, in elements of the vector.
Block part(std::size_t count, int n, int b, std::size_t phase, std::size_t num_phases) {
  const Block blk = block_of(count, n, b);
  const Block in = block_of(blk.count, static_cast<int>(num_phases), static_cast<int>(phase));
  return {blk.offset + in.offset, in.count};
}

}  // namespace

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  StepBuilder s(p);
  const std::size_t num_phases =
      phases(p.count(), n, segment_elems(p.args().segment_bytes, p.elem(), p.count()));
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  const BufRef incoming = p.scratch(p.bytes(part(p.count(), n, 0, 0, num_phases)));
  const std::uint32_t rs_tag = p.tag(), ag_tag = p.tag();
  int index = 0;
  for (std::size_t ph = 0; ph < num_phases; ++ph)
    for (int k = 0; k < n - 1; ++k, ++index) {
      const Block out = part(p.count(), n, patterns::ring_rs_send_block(r, n, k), ph, num_phases);
      const Block in = part(p.count(), n, patterns::ring_rs_recv_block(r, n, k), ph, num_phases);
      const BufRef src = k == 0 ? p.send_at(out) : p.recv_at(out);  // step 0: the input
      s.recv(prev, incoming, p.bytes(in), rs_tag).send(next, src, p.bytes(out), rs_tag);
      s.reduce(p.recv_at(in), p.send_at(in), incoming, p.bytes(in));
      co_yield s.step("reduce-scatter", index);
    }
  for (int k = 0; k < n - 1; ++k, ++index) {
    const Block out = block_of(p.count(), n, patterns::ring_ag_send_block(r, n, k));
    const Block in = block_of(p.count(), n, patterns::ring_ag_recv_block(r, n, k));
    s.recv(prev, p.recv_at(in), p.bytes(in), ag_tag).send(next, p.recv_at(out), p.bytes(out), ag_tag);
    co_yield s.step("allgather", index);
  }
}

}  // namespace

Steps allreduce_segmented_ring(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
