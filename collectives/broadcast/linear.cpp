// Linear broadcast (Open MPI's coll_tuned bcast algorithm 1, "basic_linear"): the root
// sends the whole vector to every other rank, all at once.
//
//   N = 4, root 0:   step 0: 0 -> 1, 0 -> 2, 0 -> 3
//
// Per rank: the root sends (N-1) D in N-1 messages, every other rank receives D once.
// One step, all of it through the root's port: Open MPI's fixed decision takes it for
// 8 KiB .. 1 MiB at 4 <= N < 8 and from 32 KiB at 8 <= N < 16.
// Limits: none (any N, count, root). No scratch.
#include "collscope/schedules.hpp"
#include "collscope/tree_steps.hpp"

namespace collscope::schedules {

Steps broadcast_linear(Plan& p) {
  const patterns::StaticTree star{patterns::TreeShape::star, p.size(), p.args().root};
  auto steps = detail::tree_broadcast_steps(p, star, Plan::send(), Plan::recv(), p.count() * p.elem(), p.tag(), 0);
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
