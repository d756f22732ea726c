// Linear scatter (MPICH's MPIR_Scatter_intra_linear, Open MPI's "basic_linear"): the
// root sends every other rank its block straight from its send buffer, all at once.
//
//   N = 4, root 2, sendbuf [b0 b1 b2 b3]:   2 -b0-> 0,  2 -b1-> 1,  2 -b3-> 3
//                                           (one step; b2 copied locally, or in place)
//
// Per rank: receives its block (not the root); the root sends the N-1 other blocks in
// N-1 messages. Limits: none; the root's link carries everything in one step.
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::Block;
using patterns::block_of;

Steps scatter_linear(Plan& p) {
  const int n = p.size(), r = p.rank(), root = p.args().root;
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (r != root) {
    co_yield s.recv(root, Plan::recv(), p.bytes(block_of(p.count(), n, r)), tag).step("scatter", 0);
    co_return;
  }
  for (int q = 0; q < n; ++q) {
    const Block b = block_of(p.count(), n, q);
    if (q == root) s.copy(Plan::recv(), p.send_at(b), p.bytes(b));
    else s.send(q, p.send_at(b), p.bytes(b), tag);
  }
  co_yield s.step("scatter", 0);
}

}  // namespace collscope::schedules
