// Ring all-to-all, store and forward: every rank talks only to its ring neighbours, and
// blocks travel hop by hop to their destination (the linear-array algorithm of Bokhari
// 1991 run on a ring in one direction).
//
//   N = 4, block "s>d" leaves rank s for rank d; rank r sends to r+1:
//   step 0: each rank sends its 3 outgoing blocks, nearest destination first
//     0: [0>1 0>2 0>3] -> 1      1: [1>2 1>3 1>0] -> 2   ...
//     rank 1 keeps 0>1, rank 2 keeps 1>2, ...
//   step 1: each rank forwards the 2 blocks it did not keep
//     1: [0>2 0>3] -> 2          2: [1>3 1>0] -> 3       ...
//   step 2: the last block of each origin takes its third hop
//     2: [0>3] -> 3              3: [1>0] -> 0           ...
//
// What it sends: at step k (0..N-2) one message of N-1-k blocks, those that left rank
// r-k addressed to r+1 .. r+N-1-k; in all N(N-1)/2 blocks in N-1 messages per rank,
// (N/2) x what pairwise sends (a block going d ranks ahead is sent d times). The
// textbook's "D/N per step" holds for the first hop only.
// Limits: needs 2 (N-1) blocks of scratch per rank (the message being forwarded and the
// one arriving).
#include "collscope/patterns/alltoall_ring.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps alltoall_ring(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t blk = p.count() * p.elem();
  auto at = [blk](int block) { return static_cast<std::size_t>(block) * blk; };
  StepBuilder s(p);
  s.copy(Plan::recv(at(r)), Plan::send(at(r)), blk);  // the own block
  if (n == 1) {
    co_yield s.step("copy", 0);
    co_return;
  }
  const std::uint32_t tag = p.tag();
  const BufRef buf[2] = {p.scratch(at(n - 1)), p.scratch(at(n - 1))};
  // Step 0's message: the N-1 blocks addressed to r+1 .. r+N-1, packed before anything
  // can arrive (in place, the receives overwrite the send buffer).
  for (int i = 0; i < patterns::a2a_ring_blocks_at(n, 0); ++i)
    s.copy(buf[0].plus(at(i)), Plan::send(at(patterns::a2a_ring_send_dest(r, n, i))), blk);
  co_yield s.step("pack", -1);
  BufRef outgoing = buf[0];
  for (int k = 0; k < patterns::a2a_ring_steps(n); ++k) {
    const BufRef incoming = buf[(k + 1) % 2];
    const std::size_t bytes = at(patterns::a2a_ring_blocks_at(n, k));
    s.recv(patterns::a2a_ring_prev(r, n), incoming, bytes, tag).send(patterns::a2a_ring_next(r, n), outgoing, bytes, tag);
    // The first block is ours; the rest goes on at the next step, as it arrived.
    s.copy(Plan::recv(at(patterns::a2a_ring_recv_origin(r, n, k))), incoming, blk);
    co_yield s.step("ring", k);
    outgoing = incoming.plus(blk);
  }
}

}  // namespace collscope::schedules
