// The key a call is recognised by (collscope/executor.hpp): made here, where calls are
// made from plans, and only compared by the executors that keep and replay calls.
#include "collscope/executor.hpp"

namespace collscope {

CallKey CallKey::of(const void* schedule, const Plan& plan, int extra) {
  const CollArgs& a = plan.args();
  return {schedule, extra, a.count, a.segment_bytes, a.dtype, a.op, a.root, plan.aliasing(), a.splits};
}

}  // namespace collscope
