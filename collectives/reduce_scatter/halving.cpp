// Recursive halving reduce-scatter (Thakur, Rabenseifner & Gropp 2005), any N through
// the fold of patterns/halving_doubling.hpp.
//
// Power of two: at distance d = N/2, N/4, ..., 1 rank r exchanges with r^d: it sends
// the half of its current block range on r^d's side, receives its own half and reduces.
//   N = 4, blocks A B C D:
//     d=2: 0<->2, 1<->3: 0,1 keep A B, 2,3 keep C D (two contributions each)
//     d=1: 0<->1, 2<->3: rank r keeps block r, now with all four contributions
//
// Other N: p = largest power of two <= N, rem = N - p; for v < rem, rank 2v sends its
// whole vector to 2v+1, which reduces it into its own and stands for both as virtual
// rank v among p (its virtual block is real blocks 2v and 2v+1, recursive_doubling.hpp);
// after the halving 2v+1 sends block 2v back to rank 2v.
//   N = 3, p = 2: step 0 fold 0->1 (A B C); step 1 halving d=1: 1 keeps A B, 2 keeps C;
//                 step 2 unfold 1->0: block A.
//
// A virtual rank sends and receives (p-1)/p of the vector in log2 p messages each way;
// folded pairs add the whole vector one way and a block the other.
// Limits: none (any N, any count; empty ranges are skipped); scratch of twice the
// vector on the ranks that take part in the halving. The halving and the set-aside
// rank's steps are shared with the schedules that start the same way (halving_steps.hpp).
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/schedules.hpp"
#include "halving_steps.hpp"

namespace collscope::detail {

using patterns::Block;

Steps halving_steps(Plan& p, Halving h) {
  const int n = p.size();
  StepBuilder s(p);
  BufRef src = h.input;
  int k = 1;
  for (const patterns::HdStep& step : patterns::hd_reduce_scatter_steps(n, h.vrank)) {
    const Block out = patterns::hd_range(p.count(), n, h.blocks, step.send_first, step.send_len);
    const Block in = patterns::hd_range(p.count(), n, h.blocks, step.recv_first, step.recv_len);
    const std::size_t out_at = out.offset * p.elem(), in_at = in.offset * p.elem();
    const int peer = patterns::mod(step.peer + h.shift, n);
    s.recv(peer, h.incoming, p.bytes(in), h.tag).send(peer, src.plus(out_at), p.bytes(out), h.tag);
    s.reduce(h.sums.plus(in_at), src.plus(in_at), h.incoming, p.bytes(in));
    co_yield s.step("halving", k);
    ++k;
    src = h.sums;
  }
}

Steps set_aside_steps(Plan& p, int partner, FoldTags tags, std::size_t result_bytes, int unfold_step) {
  StepBuilder s(p);
  co_yield s.send(partner, Plan::send(), p.count() * p.elem(), tags.in).step("fold", 0);
  co_yield s.recv(partner, Plan::recv(), result_bytes, tags.out).step("unfold", unfold_step);
}

}  // namespace collscope::detail

namespace collscope::schedules {

using patterns::Block;

namespace {

// A rank of the power of two: the fold's absorbers and the ranks it leaves alone.
Steps taking_part(Plan& p, patterns::HdLayout l, detail::FoldTags fold, std::uint32_t halving_tag) {
  const int n = p.size();
  const std::size_t bytes = p.count() * p.elem();
  const Block own = patterns::block_of(p.count(), n, p.rank());
  const BufRef sum = p.scratch(bytes), incoming = p.scratch(bytes);
  StepBuilder s(p);
  BufRef src = Plan::send();
  if (l.role == patterns::FoldRole::absorber) {
    s.recv(l.fold_peer, incoming, bytes, fold.in).reduce(sum, Plan::send(), incoming, bytes);
    co_yield s.step("fold", 0);
    src = sum;
  }
  auto halving = detail::halving_steps(p, {.vrank = l.vrank, .blocks = patterns::HdBlocks::folded,
                                           .input = src, .sums = sum, .incoming = incoming,
                                           .tag = halving_tag});
  while (halving.next()) co_yield halving.value();
  if (l.role == patterns::FoldRole::absorber) {
    const Block theirs = patterns::block_of(p.count(), n, l.fold_peer);
    s.send(l.fold_peer, sum.plus(theirs.offset * p.elem()), p.bytes(theirs), fold.out);
  }
  s.copy(Plan::recv(), sum.plus(own.offset * p.elem()), p.bytes(own));
  co_yield s.step("unfold", patterns::ceil_log2(l.pof2) + 1);
}

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const patterns::HdLayout l = patterns::hd_layout(p.size(), p.rank());
  const std::uint32_t fold_tag = p.tag(), halving_tag = p.tag(), unfold_tag = p.tag();
  const detail::FoldTags fold{fold_tag, unfold_tag};
  if (l.role != patterns::FoldRole::sender) return taking_part(p, l, fold, halving_tag);
  // Hands the whole vector over, takes block 2v back.
  const std::size_t own_bytes = p.bytes(patterns::block_of(p.count(), p.size(), p.rank()));
  return detail::set_aside_steps(p, l.fold_peer, fold, own_bytes, patterns::ceil_log2(l.pof2) + 1);
}

}  // namespace

Steps reduce_scatter_halving(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
