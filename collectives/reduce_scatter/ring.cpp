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

namespace collscope::schedules {

using patterns::Block;
using patterns::block_of;

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  StepBuilder s(p);
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  const std::size_t max_bytes = p.bytes(block_of(p.count(), n, 0));
  const BufRef scratch = p.scratch(2 * max_bytes);
  const BufRef partial[2] = {scratch, scratch.plus(max_bytes)};
  const std::uint32_t tag = p.tag();
  for (int k = 0; k < n - 1; ++k) {
    const Block out = block_of(p.count(), n, patterns::own_ring_rs_send_block(r, n, k));
    const Block in = block_of(p.count(), n, patterns::own_ring_rs_recv_block(r, n, k));
    // Step 0 sends untouched input; later steps forward the partial sum made last step.
    const BufRef src = k == 0 ? p.send_at(out) : partial[(k + 1) % 2];
    const BufRef incoming = partial[k % 2];
    const BufRef sum = k == n - 2 ? Plan::recv() : incoming;  // the last one is block r
    s.recv(prev, incoming, p.bytes(in), tag).send(next, src, p.bytes(out), tag);
    s.reduce(sum, p.send_at(in), incoming, p.bytes(in));
    co_yield s.step("reduce-scatter ring", k);
  }
}

}  // namespace

Steps reduce_scatter_ring(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
