// Ring allreduce = ring reduce-scatter + ring allgather (Patarasuk & Yuan 2009; the
// NCCL and Open MPI "ring").
//
//   N = 4, blocks A B C D, rank r sends to r+1:
//   reduce-scatter, step k: rank r sends block r-k, receives block r-k-1, reduces it
//     step 0:  0:A->1   1:B->2   2:C->3   3:D->0
//     step 1:  0:D->1   1:A->2   2:B->3   3:C->0      (blocks now hold 2 contributions)
//     step 2:  0:C->1   1:D->2   2:A->3   3:B->0      -> rank r owns block r+1, reduced
//   allgather, step N-1+k: rank r sends block r+1-k, receives block r-k (already final)
//
// Every rank sends 2(N-1) blocks: 2(N-1)/N of the vector when blocks are even.
// Limits: none (any N, any count; blocks follow the uneven rule, empty ones are skipped).
// Scratch: one block (the incoming partial sum).
// The halves are reduce_scatter_ring's and allgather_ring's (reduce_scatter/ring_steps.hpp,
// allgather/ring_steps.hpp), shifted by one block: here the partial sums land in the
// receive buffer, where the allgather sends them from, so one block of scratch will do.
#include "../allgather/ring_steps.hpp"
#include "../reduce_scatter/ring_steps.hpp"
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  const BufRef incoming = p.scratch(p.bytes(patterns::block_of(p.count(), n, 0)));
  const std::uint32_t rs_tag = p.tag(), ag_tag = p.tag();
  // The partial sums go straight to their blocks' places in the receive buffer, which
  // the allgather then sends from.
  const int owned = patterns::ring_owned_block(r, n);
  const detail::RingSums sums{.inbox = {incoming, incoming}, .in_recv = true};
  auto reduce_scatter = detail::ring_reduce_scatter_steps(
      p, {.owned = owned, .sums = sums, .tag = rs_tag, .phase = "reduce-scatter"});
  while (reduce_scatter.next()) co_yield reduce_scatter.value();
  const BufRef reduced = p.recv_at(patterns::block_of(p.count(), n, owned));
  auto allgather = detail::ring_allgather_steps(p, owned, reduced, ag_tag, n - 1, "allgather");
  while (allgather.next()) co_yield allgather.value();
}

}  // namespace

Steps allreduce_ring(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
