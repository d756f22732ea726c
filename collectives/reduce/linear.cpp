// Linear reduce (Open MPI's coll_tuned reduce algorithm 1, "linear"): every rank sends
// its whole vector to the root, which reduces them all.
//
//   N = 4, root 0:   step 0: 1 -> 0, 2 -> 0, 3 -> 0;  rank 0: x0 + x1 + x2 + x3
//
// Per rank: D to the root (the root receives (N-1) D in N-1 messages). Open MPI's fixed
// decision takes it at 4 <= N < 8 for 256 KiB .. 512 KiB and from 1 MiB, and at N < 4
// for 32 B .. 256 KiB. Limits: commutative ops (the order is not rank order).
// Scratch: the root receives all N-1 vectors at once, (N-1) D, within --max-scratch.
#include "collscope/schedules.hpp"
#include "tree_reduce.hpp"

namespace collscope::schedules {

Steps reduce_linear(Plan& p) {
  auto steps = detail::reduce_on_tree(p, {patterns::TreeShape::star, p.size(), p.args().root});
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
