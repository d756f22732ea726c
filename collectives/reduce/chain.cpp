// Chain reduce (Open MPI's coll_tuned reduce algorithm 3, "pipeline", and algorithm 2,
// "chain", as its fixed decision runs it: fanout 1, unsegmented): the vector travels
// root-1 -> root-2 -> ... -> root+1 -> root (mod N), each rank adding its own.
//
//   N = 4, root 0:   step 0: 3 -> 2   step 1: 2 -> 1 (x2+x3)   step 2: 1 -> 0
//
// Per rank: D from the rank after it in the chain, D to the rank before (the root only
// receives, the last rank only sends): N-1 steps of one message each. Open MPI's fixed
// decision takes it for 4 KiB .. 64 KiB at 4 <= N < 8 (and at N < 4 for 512 KiB .. 1 MiB).
// Limits: commutative ops. Scratch: the incoming vector and the partial sum.
#include "collscope/schedules.hpp"
#include "tree_reduce.hpp"

namespace collscope::schedules {

Steps reduce_chain(Plan& p) {
  auto steps = detail::reduce_on_tree(p, {patterns::TreeShape::chain, p.size(), p.args().root});
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
