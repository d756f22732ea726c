// A lone rank (N = 1): for most schedules its whole work is its input copied to its
// output, one step (step 0, "copy"). Those schedules write their steps for two ranks or
// more and route N = 1 here: `Steps allreduce_ring(Plan& p) { return alone_or(p, ...); }`.
#pragma once

#include "collscope/schedule.hpp"

namespace collscope::detail {

// The vector (count x elem bytes) from the send buffer to the receive buffer, in step 0.
inline Steps copy_alone(Plan& p) {
  StepBuilder s(p);
  co_yield s.copy(Plan::recv(), Plan::send(), p.count() * p.elem()).step("copy", 0);
}

// `steps(p)` on two ranks or more; on one, copy_alone.
inline Steps alone_or(Plan& p, Steps (*steps)(Plan&)) {
  return p.size() == 1 ? copy_alone(p) : steps(p);
}

}  // namespace collscope::detail
