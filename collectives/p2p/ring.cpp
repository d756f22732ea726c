// ring: shift k = 1 .. N-1, every rank sending the message to r+k and receiving one from
// r-k in one step, all ranks at once, so every link direction carries one message.
#include "collscope/schedules.hpp"

namespace collscope::schedules {

std::vector<P2pStep> p2p_ring_steps(int nranks) {
  std::vector<P2pStep> steps;
  for (int k = 1; k < nranks; ++k) steps.push_back({{}, k});
  return steps;
}

// One step: receive from r-k, send to r+k (at k = N/2 both are the same rank).
Steps p2p_ring(Plan& p, const P2pStep& step, const char* phase) {
  const int n = p.size(), to = (p.rank() + step.shift) % n, from = (p.rank() - step.shift + n) % n;
  const std::uint32_t tag = p.tag();
  const std::size_t bytes = p.count();
  StepBuilder s(p);
  if (bytes > 0) s.recv(from, Plan::recv(), bytes, tag).send(to, Plan::send(), bytes, tag);
  else s.wait_signal(from, tag).signal(to, tag);
  co_yield s.step(phase, 0);
}

}  // namespace collscope::schedules
