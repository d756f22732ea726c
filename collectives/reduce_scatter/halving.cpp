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
// vector on the ranks that take part in the halving.
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::Block;

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t bytes = p.count() * p.elem();
  StepBuilder s(p);
  const patterns::HdLayout l = patterns::hd_layout(n, r);
  const int steps = static_cast<int>(patterns::hd_reduce_scatter_steps(n, 0).size());
  const std::uint32_t fold_tag = p.tag(), halving_tag = p.tag(), unfold_tag = p.tag();
  const Block own = patterns::block_of(p.count(), n, r);
  if (l.role == patterns::FoldRole::sender) {  // hand the whole vector over, take block 2v back
    co_yield s.send(l.fold_peer, Plan::send(), bytes, fold_tag).step("fold", 0);
    co_yield s.recv(l.fold_peer, Plan::recv(), p.bytes(own), unfold_tag).step("unfold", steps + 1);
    co_return;
  }
  const BufRef sum = p.scratch(bytes), incoming = p.scratch(bytes);
  BufRef src = Plan::send();
  if (l.role == patterns::FoldRole::absorber) {
    s.recv(l.fold_peer, incoming, bytes, fold_tag).reduce(sum, Plan::send(), incoming, bytes);
    co_yield s.step("fold", 0);
    src = sum;
  }
  int k = 1;
  for (const patterns::HdStep& h : patterns::hd_reduce_scatter_steps(n, l.vrank)) {
    const Block out = patterns::folded_range(p.count(), n, h.send_first, h.send_len);
    const Block in = patterns::folded_range(p.count(), n, h.recv_first, h.recv_len);
    const std::size_t out_at = out.offset * p.elem(), in_at = in.offset * p.elem();
    s.recv(h.peer, incoming, p.bytes(in), halving_tag).send(h.peer, src.plus(out_at), p.bytes(out), halving_tag);
    s.reduce(sum.plus(in_at), src.plus(in_at), incoming, p.bytes(in));
    co_yield s.step("halving", k);
    ++k;
    src = sum;
  }
  if (l.role == patterns::FoldRole::absorber) {
    const Block theirs = patterns::block_of(p.count(), n, l.fold_peer);
    s.send(l.fold_peer, sum.plus(theirs.offset * p.elem()), p.bytes(theirs), unfold_tag);
  }
  s.copy(Plan::recv(), sum.plus(own.offset * p.elem()), p.bytes(own));
  co_yield s.step("unfold", steps + 1);
}

}  // namespace

Steps reduce_scatter_halving(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
