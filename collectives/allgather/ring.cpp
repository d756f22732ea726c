// Ring allgather (the Open MPI and NCCL "ring"; Patarasuk & Yuan 2009 for its
// bandwidth optimality).
//
//   N = 4, rank r sends to r+1, receives from r-1; step k: send block r-k, receive r-k-1
//     start:   0:[A . . .]  1:[. B . .]  2:[. . C .]  3:[. . . D]
//     step 0:  0:A->1  1:B->2  2:C->3  3:D->0
//     step 1:  0:D->1  1:A->2  2:B->3  3:C->0   (forward what arrived last step)
//     step 2:  0:C->1  1:D->2  2:A->3  3:B->0   -> every rank holds A B C D
//
// Every rank sends N-1 blocks (all but block r+1) and receives N-1 (all but its own):
// (N-1)/N of the vector when blocks are even, in N-1 messages each way.
// Limits: none (any N, any count; empty blocks are skipped). Step 0 sends the own block
// straight from the send buffer and copies it into place while it travels: copying
// first and sending the copy costs the copy plus a cache-cold send (1 MiB on 2 ranks:
// 290 us against 83).
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/ring_own_block.hpp"
#include "collscope/schedules.hpp"
#include "ring_steps.hpp"

namespace collscope::detail {

using patterns::Block;
using patterns::block_of;

Steps ring_allgather_steps(Plan& p, int owned, BufRef own, std::uint32_t tag, int first_step,
                           const char* phase) {
  const int n = p.size(), r = p.rank();
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  const Block mine = block_of(p.count(), n, owned);
  StepBuilder s(p);
  if (n == 1) {
    co_yield s.copy(p.recv_at(mine), own, p.bytes(mine)).step(phase, first_step);
    co_return;
  }
  for (int k = 0; k < n - 1; ++k) {
    // The ring of ring_own_block.hpp as run by the rank that starts with block `owned`.
    const Block out = block_of(p.count(), n, patterns::own_ring_ag_send_block(owned, n, k));
    const Block in = block_of(p.count(), n, patterns::own_ring_ag_recv_block(owned, n, k));
    s.recv(prev, p.recv_at(in), p.bytes(in), tag);
    s.send(next, k == 0 ? own : p.recv_at(out), p.bytes(out), tag);
    if (k == 0) s.copy(p.recv_at(mine), own, p.bytes(mine));
    co_yield s.step(phase, first_step + k);
  }
}

}  // namespace collscope::detail

namespace collscope::schedules {

Steps allgather_ring(Plan& p) {
  const std::uint32_t tag = p.tag();
  auto steps = detail::ring_allgather_steps(p, p.rank(), Plan::send(), tag, 0);
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
