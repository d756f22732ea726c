// Neighbor-exchange allgather (Chen, Zhang & Lin 2005; Open MPI's coll_tuned allgather
// algorithm 5, "neighbor", ompi_coll_base_allgather_intra_neighborexchange), for even N:
// ranks pair up with a neighbour on either side in turn and pass on, two blocks at a
// time, the pair of blocks they received in the step before.
//
//   N = 6; neighbour 0: r+1 for even r, r-1 for odd r; neighbour 1: the other side
//   step 0:  0<->1, 2<->3, 4<->5 swap their own blocks: each holds pair {2j, 2j+1}
//   step 1:  1<->2, 3<->4, 5<->0 swap the pairs they hold: {0,1}<->{2,3}, ...
//   step 2:  0<->1, 2<->3, 4<->5 swap the pairs received in step 1
//   after N/2 steps every rank holds every block.
//
// Per rank: its own block, then N/2 - 1 pairs: N-1 blocks in N/2 messages ((N-1)/N of the
// vector with even blocks, as the ring, in half its messages). Odd N: Open MPI runs the
// ring instead, and so does this schedule (ring_steps.hpp).
// Limits: none (any N, any count; empty blocks are skipped). No scratch.
#include "collscope/patterns/block.hpp"
#include "collscope/schedules.hpp"
#include "ring_steps.hpp"

namespace collscope::schedules {

using patterns::Block;
using patterns::block_of;
using patterns::block_range;

Steps allgather_neighbor_exchange(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::uint32_t tag = p.tag();
  if (n % 2 == 1) {  // Open MPI's fallback: the ring
    auto ring = detail::ring_allgather_steps(p, r, Plan::send(), tag, 0);
    while (ring.next()) co_yield ring.value();
    co_return;
  }
  const bool even = r % 2 == 0;
  const int neighbour[2] = {patterns::mod(r + (even ? 1 : -1), n), patterns::mod(r + (even ? -1 : 1), n)};
  const int offset[2] = {even ? 2 : -2, even ? -2 : 2};
  const Block mine = block_of(p.count(), n, r), theirs = block_of(p.count(), n, neighbour[0]);
  StepBuilder s(p);
  s.recv(neighbour[0], p.recv_at(theirs), p.bytes(theirs), tag).send(neighbour[0], Plan::send(), p.bytes(mine), tag);
  s.copy(p.recv_at(mine), Plan::send(), p.bytes(mine));
  co_yield s.step("own block", 0);
  const int pair = r - r % 2;  // the first block of the pair this rank now holds
  int sent_from = pair, recv_from[2] = {pair, pair};
  for (int i = 1; i < n / 2; ++i) {
    const int side = i % 2;
    recv_from[side] = patterns::mod(recv_from[side] + offset[side], n);
    const Block out = block_range(p.count(), n, sent_from, 2), in = block_range(p.count(), n, recv_from[side], 2);
    s.recv(neighbour[side], p.recv_at(in), p.bytes(in), tag).send(neighbour[side], p.recv_at(out), p.bytes(out), tag);
    co_yield s.step("pairs", i);
    sent_from = recv_from[side];
  }
}

}  // namespace collscope::schedules
