#include "collscope/executor.hpp"

namespace collscope {

void Traffic::reset() {
  for (RankVolume& v : per_peer_) v = {};
  copies_ = {};
}

// The one counting rule of every executor. Data messages of zero bytes never reach it
// (StepBuilder drops them); a signal is a message of zero bytes.
void Traffic::count(const CommOp& op) {
  RankVolume& v = per_peer_[static_cast<std::size_t>(op.peer)];
  switch (op.kind) {
    case CommKind::send: v.send(op.bytes); break;
    case CommKind::recv: v.recv(op.bytes); break;
    case CommKind::signal: v.signal_sent(); break;
    case CommKind::wait_signal: v.signal_received(); break;
  }
}

void Traffic::count_planned(Steps& steps) {
  while (steps.next())
    for (const CommOp& op : steps.value().comm) count(op);
}

RankVolume Traffic::total() const {
  RankVolume t;
  for (const RankVolume& v : per_peer_) t += v;
  return t;
}

}  // namespace collscope
