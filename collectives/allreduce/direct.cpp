// Direct allreduce: full mesh (the "ReduceBroadcast" of some write-ups). Every rank
// sends its whole vector to every other rank and reduces the N vectors itself.
//
//   N = 3:   0 -> 1, 0 -> 2,   1 -> 0, 1 -> 2,   2 -> 0, 2 -> 1   (one round)
//   each rank: result = x0 op x1 op x2, always in rank order, so every rank computes
//   the same bits even where the op is not associative in floating point.
//
// Every rank sends and receives (N-1) whole vectors: one round of latency, N/2 times
// the bytes of the ring. Limits: needs (N-1) x the vector of scratch per rank (and one
// more vector in place, where the reduction would overwrite the input before its turn).
#include "collscope/lone_rank.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t bytes = p.count() * p.elem();
  StepBuilder s(p);
  const BufRef inbox = p.scratch(static_cast<std::size_t>(n - 1) * bytes);
  const BufRef input = p.in_place() ? p.scratch(bytes) : Plan::send();
  const std::uint32_t tag = p.tag();
  // Peer q's vector lands in slot q (ranks above r shift down one: r has no slot).
  auto vec = [&](int q) {
    return q == r ? input : inbox.plus(static_cast<std::size_t>(q < r ? q : q - 1) * bytes);
  };
  if (p.in_place()) co_yield s.copy(input, Plan::send(), bytes).step("keep input", 0);
  for (int q = 0; q < n; ++q)
    if (q != r) s.recv(q, vec(q), bytes, tag).send(q, input, bytes, tag);
  s.reduce(Plan::recv(), vec(0), vec(1), bytes);
  for (int q = 2; q < n; ++q) s.reduce(Plan::recv(), Plan::recv(), vec(q), bytes);
  co_yield s.step("exchange", 1);
}

}  // namespace

Steps allreduce_direct(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
