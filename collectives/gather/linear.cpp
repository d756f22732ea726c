// Linear gather (MPICH's MPIR_Gather_intra_linear, Open MPI's "basic_linear"): every
// rank sends its block straight to the root, which receives them all at once, each into
// its place in the receive buffer.
//
//   N = 4, root 2:   0 -b0-> 2,  1 -b1-> 2,  3 -b3-> 2    (one step)
//                    root: recvbuf = [b0 b1 b2 b3]  (b2 copied locally, or in place)
//
// Per rank: sends its block (not the root); the root receives the N-1 other blocks in
// N-1 messages. Limits: none; the root's link carries everything in one step, which
// is the fastest at small N and the slowest at large N.
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::Block;
using patterns::block_of;

Steps gather_linear(Plan& p) {
  const int n = p.size(), r = p.rank(), root = p.args().root;
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (r != root) {
    co_yield s.send(root, Plan::send(), p.bytes(block_of(p.count(), n, r)), tag).step("gather", 0);
    co_return;
  }
  for (int q = 0; q < n; ++q) {
    const Block b = block_of(p.count(), n, q);
    if (q == root) s.copy(p.recv_at(b), Plan::send(), p.bytes(b));
    else s.recv(q, p.recv_at(b), p.bytes(b), tag);
  }
  co_yield s.step("gather", 0);
}

}  // namespace collscope::schedules
