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
// The halves are allreduce_ring's (reduce_scatter/ring_steps.hpp, run over each part,
// and allgather/ring_steps.hpp).
#include "../allgather/ring_steps.hpp"
#include "../reduce_scatter/ring_steps.hpp"
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

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

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t num_phases =
      phases(p.count(), n, segment_elems(p.args().segment_bytes, p.elem(), p.count()));
  const BufRef incoming = p.scratch(p.bytes(patterns::block_part(p.count(), n, 0, 0, num_phases)));
  const std::uint32_t rs_tag = p.tag(), ag_tag = p.tag();
  // allreduce_ring's halves: its reduce-scatter once per part, then its allgather.
  const int owned = patterns::ring_owned_block(r, n);
  const detail::RingSums sums{.inbox = {incoming, incoming}, .in_recv = true};
  for (std::size_t ph = 0; ph < num_phases; ++ph) {
    auto reduce_scatter = detail::ring_reduce_scatter_steps(
        p, {.owned = owned, .sums = sums, .tag = rs_tag, .phase = "reduce-scatter",
            .first_step = static_cast<int>(ph) * (n - 1), .part = ph, .parts = num_phases});
    while (reduce_scatter.next()) co_yield reduce_scatter.value();
  }
  const BufRef reduced = p.recv_at(patterns::block_of(p.count(), n, owned));
  const int first_step = static_cast<int>(num_phases) * (n - 1);
  auto allgather = detail::ring_allgather_steps(p, owned, reduced, ag_tag, first_step, "allgather");
  while (allgather.next()) co_yield allgather.value();
}

}  // namespace

Steps allreduce_segmented_ring(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
