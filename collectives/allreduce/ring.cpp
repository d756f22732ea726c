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
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/ring.hpp"
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
  const BufRef incoming = p.scratch(p.bytes(block_of(p.count(), n, 0)));
  const std::uint32_t rs_tag = p.tag(), ag_tag = p.tag();
  for (int k = 0; k < n - 1; ++k) {
    const Block out = block_of(p.count(), n, patterns::ring_rs_send_block(r, n, k));
    const Block in = block_of(p.count(), n, patterns::ring_rs_recv_block(r, n, k));
    // Step 0 sends the untouched input; later steps send what the last step reduced.
    const BufRef src = k == 0 ? p.send_at(out) : p.recv_at(out);
    s.recv(prev, incoming, p.bytes(in), rs_tag).send(next, src, p.bytes(out), rs_tag);
    s.reduce(p.recv_at(in), p.send_at(in), incoming, p.bytes(in));
    co_yield s.step("reduce-scatter", k);
  }
  for (int k = 0; k < n - 1; ++k) {
    const Block out = block_of(p.count(), n, patterns::ring_ag_send_block(r, n, k));
    const Block in = block_of(p.count(), n, patterns::ring_ag_recv_block(r, n, k));
    s.recv(prev, p.recv_at(in), p.bytes(in), ag_tag).send(next, p.recv_at(out), p.bytes(out), ag_tag);
    co_yield s.step("allgather", n - 1 + k);
  }
}

}  // namespace

Steps allreduce_ring(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
