#include "collscope/consumed_receives.hpp"

namespace collscope {
namespace {

bool same(BufRef a, BufRef b) {
  return a.region == b.region && a.slot == b.slot && a.offset == b.offset;
}

bool touches(const Plan& plan, const LocalOp& op, const Range& r) {
  if (plan.locate(op.out, op.bytes).overlaps(r) || plan.locate(op.a, op.bytes).overlaps(r))
    return true;
  return op.kind == LocalKind::reduce && plan.locate(op.b, op.bytes).overlaps(r);
}

// The index of the local op that consumes `recv`, or -1.
int consumer_of(const Plan& plan, const Step& s, const CommOp& recv) {
  if (recv.kind != CommKind::recv || recv.buf.region != Region::scratch) return -1;
  const Range r = plan.locate(recv.buf, recv.bytes);
  for (std::size_t i = 0; i < s.local.size(); ++i) {
    const LocalOp& op = s.local[i];
    const bool reads_it = op.kind == LocalKind::reduce && op.bytes == recv.bytes &&
                          (same(op.a, recv.buf) || same(op.b, recv.buf));
    if (reads_it && !plan.locate(op.out, op.bytes).overlaps(r)) return static_cast<int>(i);
    if (touches(plan, op, r)) return -1;  // read or written before any reduce consumes it
  }
  return -1;
}

}  // namespace

void consumed_receives(const Plan& plan, const Step& s, std::vector<int>& consumer) {
  consumer.assign(s.comm.size(), -1);
  if (s.local.empty()) return;
  for (std::size_t i = 0; i < s.comm.size(); ++i) consumer[i] = consumer_of(plan, s, s.comm[i]);
}

}  // namespace collscope
