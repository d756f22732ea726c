// Recursive-doubling allreduce (Open MPI's coll_tuned allreduce algorithm 3,
// "recursive_doubling"; MPICH's for short messages; Thakur, Rabenseifner & Gropp 2005):
// among the largest power of two p <= N, every rank exchanges its whole partial result
// with the rank at distance 1, 2, 4, ... and reduces what arrives into it; the other
// N - p ranks fold in before and out after (the fold of halving_doubling.hpp).
//
//   N = 6, p = 4: ranks 0, 2 hand their vector to 1, 3 and sit out;
//   virtual ranks v: 1->0, 3->1, 4->2, 5->3
//   step 0   fold     0 -> 1, 2 -> 3: the whole vector; 1, 3 reduce it into theirs
//   step 1   d = 1    v0<->v1 (1<->3), v2<->v3 (4<->5): the whole vector each way
//   step 2   d = 2    v0<->v2 (1<->4), v1<->v3 (3<->5): likewise
//   step 3   unfold   1 -> 0, 3 -> 2: the result
//
// Per rank in the power of two: log2 p messages of the whole vector each way, D log2 p
// sent (N = 8: 3 D in 3 messages, where the ring sends 1.75 D in 14); a folded pair adds
// one vector each way. A latency algorithm: Open MPI's fixed decision takes it below
// 8 KiB at 4 <= N < 16 (and its ring and Rabenseifner fall back to it when the count is
// below N).
//
// The partial result alternates between the receive buffer and one scratch vector: a
// step receives into the one it does not send from and reduces there, so no step
// writes what it sends; the last exchange lands in the receive buffer where the start
// allows, else a final copy moves it there (in place with log2 p odd).
// Limits: none (any N, any count). Scratch: one vector. A rank the fold sets aside runs
// the steps every whole-vector fold shares (reduce_scatter/halving_steps.hpp).
#include "../reduce_scatter/halving_steps.hpp"
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

bool same(BufRef a, BufRef b) { return a.region == b.region && a.slot == b.slot; }

// A rank of the power of two: the fold's absorbers and the ranks it leaves alone.
Steps taking_part(Plan& p, patterns::HdLayout l, detail::FoldTags fold, std::uint32_t exchange_tag) {
  const int n = p.size(), rounds = patterns::ceil_log2(l.pof2);
  const std::size_t bytes = p.count() * p.elem();
  StepBuilder s(p);
  const BufRef scratch = p.scratch(bytes);
  // Exchange k (1..rounds) leaves the partial result in target(k): the receive buffer at
  // the last one.
  auto target = [&](int k) { return (rounds - k) % 2 == 0 ? Plan::recv() : scratch; };
  auto other = [&](BufRef held) { return same(held, Plan::recv()) ? scratch : Plan::recv(); };
  BufRef held = p.in_place() ? Plan::recv() : Plan::send();
  if (l.role == patterns::FoldRole::absorber) {
    const BufRef sum = p.in_place() ? Plan::recv() : other(target(1));
    s.recv(l.fold_peer, scratch, bytes, fold.in).reduce(sum, held, scratch, bytes);
    co_yield s.step("fold", 0);
    held = sum;
  }
  for (int k = 1; k <= rounds; ++k) {
    const int peer = patterns::hd_real_rank(n, l.vrank ^ (1 << (k - 1)));
    const BufRef into = same(held, Plan::send()) ? target(k) : other(held);
    s.recv(peer, into, bytes, exchange_tag).send(peer, held, bytes, exchange_tag);
    s.reduce(into, held, into, bytes);
    co_yield s.step("exchange", k);
    held = into;
  }
  if (!same(held, Plan::recv())) co_yield s.copy(Plan::recv(), held, bytes).step("result", rounds + 1);
  if (l.role == patterns::FoldRole::absorber)
    co_yield s.send(l.fold_peer, Plan::recv(), bytes, fold.out).step("unfold", rounds + 2);
}

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const patterns::HdLayout l = patterns::hd_layout(p.size(), p.rank());
  const std::uint32_t fold_tag = p.tag(), exchange_tag = p.tag(), unfold_tag = p.tag();
  const detail::FoldTags fold{fold_tag, unfold_tag};
  if (l.role != patterns::FoldRole::sender) return taking_part(p, l, fold, exchange_tag);
  // Hands over the input, waits for the result.
  const int unfold_step = patterns::ceil_log2(l.pof2) + 2;
  return detail::set_aside_steps(p, l.fold_peer, fold, p.count() * p.elem(), unfold_step);
}

}  // namespace

Steps allreduce_recursive_doubling(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
