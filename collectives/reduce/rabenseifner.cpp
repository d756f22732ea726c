// Rabenseifner's reduce (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005, "reduce-
// scatter followed by gather"; MPICH's MPIR_Reduce_intra_reduce_scatter_gather): a
// reduce-scatter by recursive halving, so that every rank reduces 1/p of the vector,
// then a binomial gather of the reduced blocks to the root, instead of the binomial
// tree's whole vector up every edge and all of the last additions at the root.
//
// Any N through the fold of patterns/halving_doubling.hpp (p = largest power of two
// <= N, rem = N - p), applied to ranks renumbered rel = (rank - root - 1) mod N so that
// the root is rel N - 1, which is never folded out (N - 1 >= 2 rem always) and is
// virtual rank p - 1. Blocks are the p blocks of the vector (the block rule, p blocks):
// virtual rank v owns block v after the halving.
//
//   step 0         fold: rel 2v -> rel 2v+1 (v < rem) the whole vector; 2v+1 adds it
//   steps 1..L     halving, d = p/2 .. 1: v <-> v^d, send the half on v^d's side of the
//                  current range, receive and add the own half (L = log2 p)
//   steps L+1..2L  gather, d = 1 .. p/2, toward virtual root p-1 (u = v ^ (p-1)):
//                  u mod 2d == d sends the d blocks it holds to v^d and is done;
//                  u mod 2d == 0 receives v^d's d blocks next to its own
//
//   N = 2, root 0 (p = 2; rank 1 is v0, the root v1):
//     step 1: 0 sends the low half to 1, 1 sends the high half to 0; each adds one half
//     step 2: 1 sends the reduced low half to 0, which now holds the whole sum
//   N = 3, root 0: rel 0 = rank 1 folds into rel 1 = rank 2 (v0); the root is v1:
//     step 0: 1 -> 2 whole vector; step 1: 2 <-> 0 halves; step 2: 2 -> 0 low half
//
// Per rank in the power of two (even blocks): the halving sends and receives (p-1)/p of
// the vector in L messages each way and reduces what it receives; the gather sends the
// 2^k blocks a rank holds once (v != p-1), and the root receives (p-1)/p of the vector in
// L messages. So the root receives 2 (p-1)/p of the vector and sends (p-1)/p, against N-1
// or log2 N whole vectors received in reduce_binomial; folded pairs add the whole vector
// one way. Limits: commutative and associative ops (the blocks are summed in different
// orders; floats may round differently from a rank-ordered sum), as reduce_binomial.
// Scratch: the incoming half (at most half the vector, rounded up) and, off the root,
// the partial sums (the vector). The halving is reduce_scatter_halving's
// (reduce_scatter/halving_steps.hpp), on p blocks and the renumbered ranks.
#include "../reduce_scatter/halving_steps.hpp"
#include "collscope/lone_rank.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::Block;

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const std::size_t bytes = p.count() * p.elem();
  StepBuilder s(p);
  // The fold and the halving on ranks renumbered so that the root is rel N - 1.
  const int shift = root + 1;
  auto real = [&](int rel) { return patterns::to_real(rel, shift, n); };
  const patterns::HdLayout l = patterns::hd_layout(n, patterns::to_virtual(p.rank(), shift, n));
  const std::uint32_t fold_tag = p.tag(), halving_tag = p.tag(), gather_tag = p.tag();
  if (l.role == patterns::FoldRole::sender) {
    co_yield s.send(real(l.fold_peer), Plan::send(), bytes, fold_tag).step("fold", 0);
    co_return;
  }
  const bool is_root = p.rank() == root;
  auto range = [&](int first, int len) { return patterns::block_range(p.count(), l.pof2, first, len); };
  const BufRef incoming = p.scratch(p.bytes(range(0, l.pof2 / 2)));
  const BufRef sum = is_root ? Plan::recv() : p.scratch(bytes);  // the partial sums
  BufRef src = Plan::send();  // where this rank's input lives until the first reduction
  if (l.role == patterns::FoldRole::absorber) {
    s.recv(real(l.fold_peer), sum, bytes, fold_tag).reduce(sum, Plan::send(), sum, bytes);
    co_yield s.step("fold", 0);
    src = sum;
  }
  auto halving = detail::halving_steps(p, {.vrank = l.vrank, .blocks = patterns::HdBlocks::pof2,
                                           .input = src, .sums = sum, .incoming = incoming,
                                           .tag = halving_tag, .shift = shift});
  while (halving.next()) co_yield halving.value();
  int k = 1 + patterns::ceil_log2(l.pof2);  // the gather's first step
  // The gather: the doubling steps of the allgather, each taken one way only.
  const int u = l.vrank ^ (l.pof2 - 1);
  int d = 1;
  for (const patterns::HdStep& h : patterns::hd_allgather_steps(n, l.vrank)) {
    const int peer = real(h.peer);
    if ((u & (2 * d - 1)) == d) {  // hand over what this rank holds, and stop
      const Block out = range(h.send_first, h.send_len);
      co_yield s.send(peer, sum.plus(out.offset * p.elem()), p.bytes(out), gather_tag).step("gather", k);
      co_return;
    }
    if ((u & (2 * d - 1)) == 0) {
      const Block in = range(h.recv_first, h.recv_len);
      co_yield s.recv(peer, sum.plus(in.offset * p.elem()), p.bytes(in), gather_tag).step("gather", k);
    }
    ++k;
    d *= 2;
  }
}

}  // namespace

Steps reduce_rabenseifner(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
