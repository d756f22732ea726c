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
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/halving_doubling.hpp"
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
  const std::uint32_t fold_tag = p.tag(), halving_tag = p.tag(), doubling_tag = p.tag(),
                      unfold_tag = p.tag();
  if (l.role == patterns::FoldRole::sender) {  // hand over the input, wait for the result
    co_yield s.send(l.fold_peer, Plan::send(), bytes, fold_tag).step("fold", 0);
    co_yield s.recv(l.fold_peer, Plan::recv(), bytes, unfold_tag).step("unfold", 2 * steps + 1);
    co_return;
  }
  const BufRef incoming = p.scratch(p.bytes(patterns::block_range(p.count(), l.pof2, 0, l.pof2 / 2)));
  const BufRef partner = l.role == patterns::FoldRole::absorber ? p.scratch(bytes) : BufRef{};
  BufRef src = Plan::send();  // where this rank's input lives until the first reduction
  if (l.role == patterns::FoldRole::absorber) {
    s.recv(l.fold_peer, partner, bytes, fold_tag).reduce(Plan::recv(), Plan::send(), partner, bytes);
    co_yield s.step("fold", 0);
    src = Plan::recv();
  }
  auto range = [&](int first, int len) { return patterns::block_range(p.count(), l.pof2, first, len); };
  int k = 1;
  for (const patterns::HdStep& h : patterns::hd_reduce_scatter_steps(n, l.vrank)) {
    const Block out = range(h.send_first, h.send_len), in = range(h.recv_first, h.recv_len);
    s.recv(h.peer, incoming, p.bytes(in), halving_tag).send(h.peer, src.plus(out.offset * p.elem()), p.bytes(out), halving_tag);
    s.reduce(p.recv_at(in), src.plus(in.offset * p.elem()), incoming, p.bytes(in));
    co_yield s.step("halving", k);
    ++k;
    src = Plan::recv();  // from now on the reduced halves live in recvbuf
  }
  for (const patterns::HdStep& h : patterns::hd_allgather_steps(n, l.vrank)) {
    const Block out = range(h.send_first, h.send_len), in = range(h.recv_first, h.recv_len);
    s.recv(h.peer, p.recv_at(in), p.bytes(in), doubling_tag).send(h.peer, p.recv_at(out), p.bytes(out), doubling_tag);
    co_yield s.step("doubling", k);
    ++k;
  }
  if (l.role == patterns::FoldRole::absorber)
    co_yield s.send(l.fold_peer, Plan::recv(), bytes, unfold_tag).step("unfold", 2 * steps + 1);
}

}  // namespace

Steps allreduce_halving_doubling(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
