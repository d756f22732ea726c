// Pipelined binomial reduce (Open MPI's segmented "binomial" reduce): the binomial tree
// of reduce_binomial, with the vector cut into segments of --segment bytes (rounded down
// to whole elements, at least one) so that every level of the tree works at once: a
// parent adds segment c while segment c+1 is on the wire, instead of receiving a whole
// vector and only then reducing it (binomial_steps.hpp for the schedule).
//
//   N = 2, 3 segments:   step 0: 1 -s0-> 0
//                        step 1: 1 -s1-> 0   0 adds s0 meanwhile
//                        step 2: 1 -s2-> 0   0 adds s1 meanwhile; then s2
//
// Per rank: sends the whole vector once (not the root), receives it once per child, in
// ceil(count / segment) messages each. Limits: as reduce_binomial (commutative ops).
#include "binomial_steps.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps reduce_pipelined(Plan& p) {
  auto steps = detail::binomial_reduce_steps(p, patterns::segment_elems(p.args().segment_bytes, p.elem()));
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::schedules
