// Halving-doubling allreduce (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005):
// recursive-halving reduce-scatter, then recursive-doubling allgather, on the largest
// power of two p <= N, with a fold for the other N - p ranks.
//
//   N = 6, p = 4, rem = 2:  ranks 0,2 fold into 1,3 (even -> odd);
//   virtual ranks v: 1->0, 3->1, 4->2, 5->3
//   step 0          fold: 0 -> 1, 2 -> 3 the whole vector; 1, 3 reduce it into theirs
//   halving, d = 2: v0<->v2, v1<->v3  exchange half the vector, reduce the kept half
//            d = 1: v0<->v1, v2<->v3  exchange a quarter; v now owns block v of 4
//   doubling, d = 1 then d = 2: exchange what each holds, ranges doubling
//   last step       unfold: 1 -> 0, 3 -> 2 send the whole result back
//
// Steps: 0 fold, 1..L halving, L+1..2L doubling, 2L+1 unfold (L = log2 p).
// Per rank in the power of two: the halving sends all but block v, the doubling sends
// back the ranges the halving kept; 2 (p-1)/p of the vector when blocks are even.
// Limits: none (any N via the fold, any count; empty ranges are skipped). Scratch: the
// incoming range (half the vector), and the folded partner's vector on absorbers.
// The halves are reduce_scatter_halving's halving and allgather_recursive_doubling's
// doubling (reduce_scatter/halving_steps.hpp, allgather/doubling_steps.hpp), on p blocks
// of the vector instead of the N-block partition, the partial sums in the receive buffer;
// a rank the fold sets aside runs the steps every whole-vector fold shares (likewise).
#include "../allgather/doubling_steps.hpp"
#include "../reduce_scatter/halving_steps.hpp"
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

namespace {

// A rank of the power of two: the fold's absorbers and the ranks it leaves alone.
Steps taking_part(Plan& p, patterns::HdLayout l, detail::FoldTags fold, std::uint32_t halving_tag,
                  std::uint32_t doubling_tag) {
  const int steps = patterns::ceil_log2(l.pof2);
  const std::size_t bytes = p.count() * p.elem();
  StepBuilder s(p);
  const BufRef incoming = p.scratch(p.bytes(patterns::block_range(p.count(), l.pof2, 0, l.pof2 / 2)));
  const BufRef partner = l.role == patterns::FoldRole::absorber ? p.scratch(bytes) : BufRef{};
  BufRef src = Plan::send();  // where this rank's input lives until the first reduction
  if (l.role == patterns::FoldRole::absorber) {
    s.recv(l.fold_peer, partner, bytes, fold.in).reduce(Plan::recv(), Plan::send(), partner, bytes);
    co_yield s.step("fold", 0);
    src = Plan::recv();
  }
  auto halving = detail::halving_steps(p, {.vrank = l.vrank, .blocks = patterns::HdBlocks::pof2,
                                           .input = src, .sums = Plan::recv(), .incoming = incoming,
                                           .tag = halving_tag});
  while (halving.next()) co_yield halving.value();
  auto doubling = detail::doubling_steps(p, l.vrank, patterns::HdBlocks::pof2, doubling_tag, steps + 1);
  while (doubling.next()) co_yield doubling.value();
  if (l.role == patterns::FoldRole::absorber)
    co_yield s.send(l.fold_peer, Plan::recv(), bytes, fold.out).step("unfold", 2 * steps + 1);
}

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const patterns::HdLayout l = patterns::hd_layout(p.size(), p.rank());
  const std::uint32_t fold_tag = p.tag(), halving_tag = p.tag(), doubling_tag = p.tag(),
                      unfold_tag = p.tag();
  const detail::FoldTags fold{fold_tag, unfold_tag};
  if (l.role != patterns::FoldRole::sender) return taking_part(p, l, fold, halving_tag, doubling_tag);
  // Hands over the input, waits for the result.
  const int unfold_step = 2 * patterns::ceil_log2(l.pof2) + 1;
  return detail::set_aside_steps(p, l.fold_peer, fold, p.count() * p.elem(), unfold_step);
}

}  // namespace

Steps allreduce_halving_doubling(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
