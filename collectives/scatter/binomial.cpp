// Binomial-tree scatter (MPICH's MPIR_Scatter_intra_binomial, Open MPI's "binomial"):
// the binomial gather run backwards. On virtual ranks v = (rank - root) mod N
// (patterns/binomial.hpp) the subtree of v is the run of virtual ranks [v, v + size):
// each rank receives its subtree's blocks from its parent in one message, packed in
// virtual order, keeps its own (the first) and sends each child its subtree's part,
// farthest child first.
//
//   N = 6, root 0:             step 0: 0 -b4b5-> 4
//     0 -+- 4 - 5              step 1: 0 -b2b3-> 2, 4 -b5-> 5
//        +- 2 - 3              step 2: 0 -b1-> 1,   2 -b3-> 3
//        +- 1                  (the edge to child v+m is used in step K-1-log2(m),
//                               K = ceil(log2 N))
//
// Blocks are indexed by real rank, so with root != 0 a subtree's blocks can wrap past
// block N-1 to block 0 (root 3 of 6: the subtree v 2..3 is real 5, 0). The root sends
// each child's subtree straight from its send buffer, except the one child (at most
// one) whose subtree wraps: its two pieces are packed in scratch first (step -1).
//
// Per rank: receives its subtree's blocks (not the root) in one message, sends each
// child its subtree's blocks in one message. Limits: none; scratch up to the subtree's
// blocks (at most the vector) on inner ranks. The tree's places, packed runs and the
// staging are gather_binomial's (gather/binomial_subtrees.hpp).
#include "../gather/binomial_subtrees.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::RankRun;

Steps scatter_binomial(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const detail::BinomialRank t = detail::binomial_rank(p);
  const int v = t.v, rounds = patterns::ceil_log2(n);
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  const int my_step = v == 0 ? -1 : rounds - 1 - patterns::ceil_log2(v & -v);
  if (v != 0 && t.children.empty()) {  // a leaf receives its own block straight into place
    co_yield s.recv(t.parent, Plan::recv(), p.bytes(t.own), tag).step("scatter", my_step);
    co_return;
  }
  const BufRef buf = detail::staging_scratch(p, v);
  if (v == 0) {  // the own block, and the one wrapped subtree packed, before any send
    s.copy(Plan::recv(), p.send_at(t.own), p.bytes(t.own));
    for (int c : t.children) {
      const RankRun sub = patterns::binomial_subtree(n, c);
      if (!patterns::run_wraps(n, root, sub)) continue;
      for (const detail::Piece& piece : detail::packed_pieces(p, sub))
        s.copy(buf.plus(piece.packed_at), p.send_at(piece.block), p.bytes(piece.block));
    }
  } else {  // the subtree arrives packed; the own block is its first
    s.recv(t.parent, buf, detail::run_bytes(p, patterns::binomial_subtree(n, v)), tag);
    s.copy(Plan::recv(), buf, p.bytes(t.own));
  }
  co_yield s.step("scatter", my_step);
  for (int c : t.children) {
    const RankRun sub = patterns::binomial_subtree(n, c);
    BufRef from = buf.plus(detail::run_bytes(p, {v, c - v}));  // packed behind nearer subtrees
    if (v == 0)
      from = patterns::run_wraps(n, root, sub) ? buf : p.send_at(detail::packed_pieces(p, sub)[0].block);
    s.send(patterns::to_real(c, root, n), from, detail::run_bytes(p, sub), tag);
    co_yield s.step("scatter", rounds - 1 - patterns::ceil_log2(c - v));
  }
}

}  // namespace collscope::schedules
