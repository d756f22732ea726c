// Binomial-tree reduce (MPICH's MPIR_Reduce_intra_binomial, Open MPI's "binomial" with
// no segmentation): the broadcast's binomial tree run backwards, the whole vector up
// every edge (binomial_steps.hpp for the schedule).
//
//   N = 6, root 0:             step 0: 1 -> 0, 3 -> 2, 5 -> 4
//     0 -+- 4 - 5              step 1: 2 -> 0  (x2+x3)
//        +- 2 - 3              step 2: 4 -> 0  (x4+x5)
//        +- 1                  rank 0: ((x0+x1) + (x2+x3)) + (x4+x5)
//
// Per rank: sends the whole vector once (not the root), receives it once per child, and
// reduces each child's vector after it has arrived in full (reduce_pipelined overlaps
// the two). Limits: the op must be commutative and associative (all of collscope's are;
// with root != 0 the reduction order is not rank order, so floats may round differently
// from a rank-ordered sum).
#include "binomial_steps.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps reduce_binomial(Plan& p) {
  auto steps = detail::binomial_reduce_steps(p, p.count());
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
