// Ring reduce-scatter (Patarasuk & Yuan 2009; the first half of the ring allreduce),
// shifted by one block so that rank r ends with block r, as MPI's reduce-scatter asks.
//
//   N = 4, blocks A B C D, rank r sends to r+1; step k: send the partial sum of block
//   r-k-1, receive the partial sum of block r-k-2 and add this rank's own part to it
//     step 0:  0:D->1   1:A->2   2:B->3   3:C->0     (own input blocks)
//     step 1:  0:C->1   1:D->2   2:A->3   3:B->0     (two contributions each)
//     step 2:  0:B->1   1:C->2   2:D->3   3:A->0     -> rank r adds its part of block r
//
// Every rank sends N-1 blocks (all but its own) and receives N-1 (all but block r-1):
// (N-1)/N of the vector when blocks are even, in N-1 messages each way.
// Limits: none (any N, any count; empty blocks are skipped). Partial sums live in two
// scratch blocks (one received into while the other is sent); in place, the send
// buffer is never written but for block r, the result.
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/ring_own_block.hpp"
#include "collscope/schedules.hpp"
#include "ring_steps.hpp"

namespace collscope::detail {

using patterns::Block;

Steps ring_reduce_scatter_steps(Plan& p, RingReduceScatter rs) {
  const int n = p.size(), r = p.rank();
  StepBuilder s(p);
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  auto part = [&](int b) { return patterns::block_part(p.count(), n, b, rs.part, rs.parts); };
  BufRef last_sum;  // what the last step reduced: this step sends it on
  for (int k = 0; k < n - 1; ++k) {
    // The ring of ring_own_block.hpp as run by the rank that ends with block `owned`.
    const Block out = part(patterns::own_ring_rs_send_block(rs.owned, n, k));
    const Block in = part(patterns::own_ring_rs_recv_block(rs.owned, n, k));
    const BufRef incoming = rs.sums.inbox[k % 2];
    const BufRef sum = rs.sums.in_recv ? p.recv_at(in) : k == n - 2 ? Plan::recv() : incoming;
    // Step 0 sends the untouched input; later steps forward the partial sum made last step.
    const BufRef src = k == 0 ? p.send_at(out) : last_sum;
    s.recv(prev, incoming, p.bytes(in), rs.tag).send(next, src, p.bytes(out), rs.tag);
    s.reduce(sum, p.send_at(in), incoming, p.bytes(in));
    co_yield s.step(rs.phase, rs.first_step + k);
    last_sum = sum;
  }
}

}  // namespace collscope::detail

namespace collscope::schedules {

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const std::size_t max_bytes = p.bytes(patterns::block_of(p.count(), p.size(), 0));
  const BufRef scratch = p.scratch(2 * max_bytes);
  const std::uint32_t tag = p.tag();
  const detail::RingSums partials{.inbox = {scratch, scratch.plus(max_bytes)}, .in_recv = false};
  return detail::ring_reduce_scatter_steps(
      p, {.owned = p.rank(), .sums = partials, .tag = tag, .phase = "reduce-scatter ring"});
}

}  // namespace

Steps reduce_scatter_ring(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
