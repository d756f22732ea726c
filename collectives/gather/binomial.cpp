// Binomial-tree gather (MPICH's MPIR_Gather_intra_binomial, Open MPI's "binomial"). On
// virtual ranks v = (rank - root) mod N (patterns/binomial.hpp) the subtree of v is the
// run of virtual ranks [v, v + size): each rank collects its subtree's blocks in virtual
// order (its own first, then each child's subtree behind it) and sends them to its
// parent in one message.
//
//   N = 6, root 0:             step 0: 1 -b1-> 0, 3 -b3-> 2, 5 -b5-> 4
//     0 -+- 4 - 5              step 1: 2 -b2b3-> 0
//        +- 2 - 3              step 2: 4 -b4b5-> 0
//        +- 1                  (child v+m sends in step log2(m), nearest first)
//
// Blocks are indexed by real rank, so with root != 0 a subtree's blocks can wrap past
// block N-1 to block 0 (root 3 of 6: the subtree v 2..3 is real 5, 0). Below the root
// that does not matter (a subtree travels packed in virtual order); the root receives
// each child's subtree straight into its receive buffer, except the one child (at most
// one) whose subtree wraps: that one lands in scratch and is copied as two pieces.
//
// Per rank: sends its subtree's blocks (not the root) in one message, receives each
// child's subtree's blocks in one message. Limits: none; scratch up to the subtree's
// blocks (at most the vector) on inner ranks. The tree's places, packed runs and the
// staging are shared with scatter_binomial, its mirror (binomial_subtrees.hpp).
#include <vector>

#include "binomial_subtrees.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/schedules.hpp"

namespace collscope::detail {

BinomialRank binomial_rank(const Plan& p) {
  const int n = p.size(), root = p.args().root;
  const int v = patterns::to_virtual(p.rank(), root, n);
  const int parent = v == 0 ? -1 : patterns::to_real(patterns::binomial_parent(n, v), root, n);
  return {v, parent, patterns::binomial_children(n, v), patterns::block_of(p.count(), n, p.rank())};
}

std::size_t run_bytes(const Plan& p, patterns::RankRun virt) {
  return patterns::virtual_run_elems(p.count(), p.size(), p.args().root, virt) * p.elem();
}

BufRef staging_scratch(Plan& p, int v) {
  const std::size_t elems = patterns::binomial_staging_elems(p.count(), p.size(), p.args().root, v);
  return elems > 0 ? p.scratch(elems * p.elem()) : BufRef{};
}

std::array<Piece, 2> packed_pieces(const Plan& p, patterns::RankRun virt) {
  const auto runs = patterns::real_runs(p.size(), p.args().root, virt);
  const patterns::Block first = patterns::run_block(p.count(), p.size(), runs[0]);
  const patterns::Block second = patterns::run_block(p.count(), p.size(), runs[1]);
  return {Piece{first, 0}, Piece{second, p.bytes(first)}};
}

}  // namespace collscope::detail

namespace collscope::schedules {

using patterns::Block;
using patterns::RankRun;

Steps gather_binomial(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const detail::BinomialRank t = detail::binomial_rank(p);
  const int v = t.v;
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (v != 0 && t.children.empty()) {  // a leaf sends its own block as it is
    co_yield s.send(t.parent, Plan::send(), p.bytes(t.own), tag).step("gather", patterns::ceil_log2(v & -v));
    co_return;
  }
  // Inner ranks pack their subtree in scratch; the root uses its receive buffer, and
  // scratch only for the one child subtree that wraps.
  const BufRef buf = detail::staging_scratch(p, v);
  s.copy(v == 0 ? p.recv_at(t.own) : buf, Plan::send(), p.bytes(t.own));  // in the first step
  for (auto it = t.children.rbegin(); it != t.children.rend(); ++it) {  // nearest first
    const int c = *it;
    const RankRun sub = patterns::binomial_subtree(n, c);
    const int child = patterns::to_real(c, root, n);
    if (v != 0) {  // behind our own block and the nearer children's subtrees
      s.recv(child, buf.plus(detail::run_bytes(p, {v, c - v})), detail::run_bytes(p, sub), tag);
    } else if (!patterns::run_wraps(n, root, sub)) {
      const Block b = detail::packed_pieces(p, sub)[0].block;
      s.recv(child, p.recv_at(b), p.bytes(b), tag);
    } else {  // lands packed in scratch, then goes to its two places
      s.recv(child, buf, detail::run_bytes(p, sub), tag);
      for (const detail::Piece& piece : detail::packed_pieces(p, sub))
        s.copy(p.recv_at(piece.block), buf.plus(piece.packed_at), p.bytes(piece.block));
    }
    co_yield s.step("gather", patterns::ceil_log2(c - v));
  }
  if (v == 0) {
    co_yield s.step("gather", 0);  // a lone root's copy
    co_return;
  }
  co_yield s.send(t.parent, buf, detail::run_bytes(p, patterns::binomial_subtree(n, v)), tag)
      .step("send", patterns::ceil_log2(v & -v));
}

}  // namespace collscope::schedules
