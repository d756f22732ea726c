// Bruck all-to-all: ceil(log2 N) steps instead of N-1, paid for in bytes (Bruck, Ho,
// Kipnis, Upfal, Weathersby, IEEE TPDS 8(11) 1997; MPICH's short-message all-to-all).
//
//   N = 4, rank r, work position i holds the block addressed i ranks ahead:
//   rotate:  work = [r>r  r>r+1  r>r+2  r>r+3]
//   step 0:  positions 1, 3 (bit 0 set) go to r+1; the same positions come from r-1
//            work = [r>r  r-1>r  r>r+2  r-1>r+2]
//   step 1:  positions 2, 3 (bit 1 set) go to r+2; the same positions come from r-2
//            work = [r>r  r-1>r  r-2>r  r-3>r]
//   rotate back: position i -> receive block r-i.
//
// Each rank sends ceil(log2 N) messages, message k holding the blocks whose position has
// bit k set: sum over i < N of popcount(i) blocks in all, against N-1 for pairwise
// (equal for N <= 3; N = 4: 4 blocks in 2 messages against 3 in 3; N = 8: 12 in 3
// against 7 in 7). Fewer messages, more bytes: a latency algorithm for small blocks.
// Limits: needs N + 2 x (largest message) blocks of scratch per rank (the rotated
// work buffer and the packed message each way); pack and unpack copies at every step.
#include "collscope/patterns/alltoall_bruck.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps alltoall_bruck(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t blk = p.count() * p.elem();
  auto at = [blk](int block) { return static_cast<std::size_t>(block) * blk; };
  const int steps = patterns::a2a_bruck_steps(n);
  const BufRef work = p.scratch(at(n));
  const BufRef out_msg = p.scratch(at(patterns::a2a_bruck_max_blocks(n)));
  const BufRef in_msg = p.scratch(at(patterns::a2a_bruck_max_blocks(n)));
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  // Rotate in: position i takes send block r+i; position 0 (our own block) never moves
  // and goes straight across.
  s.copy(Plan::recv(at(r)), Plan::send(at(r)), blk);
  for (int i = 1; i < n; ++i)
    s.copy(work.plus(at(i)), Plan::send(at(patterns::a2a_bruck_first_block(r, n, i))), blk);
  for (int k = 0; k < steps; ++k) {  // pack the positions with bit k set, in order
    int packed = 0;
    for (int i = 1; i < n; ++i)
      if (patterns::a2a_bruck_moves(i, k)) s.copy(out_msg.plus(at(packed++)), work.plus(at(i)), blk);
    co_yield s.step("pack", 2 * k - 1);
    const std::size_t bytes = at(patterns::a2a_bruck_blocks_at(n, k));
    s.recv(patterns::a2a_bruck_recv_peer(r, n, k), in_msg, bytes, tag);
    s.send(patterns::a2a_bruck_send_peer(r, n, k), out_msg, bytes, tag);
    packed = 0;
    for (int i = 1; i < n; ++i)
      if (patterns::a2a_bruck_moves(i, k)) s.copy(work.plus(at(i)), in_msg.plus(at(packed++)), blk);
    co_yield s.step("bruck", 2 * k);
  }
  // Rotate out: receive block r-i takes work position i.
  for (int i = 1; i < n; ++i)
    s.copy(Plan::recv(at(patterns::a2a_bruck_last_block(r, n, i))), work.plus(at(i)), blk);
  co_yield s.step("unrotate", 2 * steps);
}

}  // namespace collscope::schedules
