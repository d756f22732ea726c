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
// blocks (at most the vector) on inner ranks.
#include <vector>

#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

using patterns::Block;
using patterns::RankRun;

std::size_t run_bytes(const Plan& p, RankRun virt) {
  return patterns::virtual_run_elems(p.count(), p.size(), p.args().root, virt) * p.elem();
}

}  // namespace

Steps gather_binomial(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const int v = patterns::to_virtual(p.rank(), root, n);
  const std::vector<int> children = patterns::binomial_children(n, v);  // farthest first
  const Block own = patterns::block_of(p.count(), n, p.rank());
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (v != 0 && children.empty()) {  // a leaf sends its own block as it is
    const int parent = patterns::to_real(patterns::binomial_parent(n, v), root, n);
    co_yield s.send(parent, Plan::send(), p.bytes(own), tag).step("gather", patterns::ceil_log2(v & -v));
    co_return;
  }
  // Inner ranks pack their subtree in scratch; the root uses its receive buffer, and
  // scratch only for the one child subtree that wraps.
  const std::size_t staging = patterns::binomial_staging_elems(p.count(), n, root, v) * p.elem();
  const BufRef buf = staging > 0 ? p.scratch(staging) : BufRef{};
  s.copy(v == 0 ? p.recv_at(own) : buf, Plan::send(), p.bytes(own));  // in the first step
  for (auto it = children.rbegin(); it != children.rend(); ++it) {  // nearest first
    const int c = *it;
    const RankRun sub = patterns::binomial_subtree(n, c);
    const int child = patterns::to_real(c, root, n);
    if (v != 0) {  // behind our own block and the nearer children's subtrees
      s.recv(child, buf.plus(run_bytes(p, {v, c - v})), run_bytes(p, sub), tag);
    } else if (!patterns::run_wraps(n, root, sub)) {
      const Block b = patterns::run_block(p.count(), n, patterns::real_runs(n, root, sub)[0]);
      s.recv(child, p.recv_at(b), p.bytes(b), tag);
    } else {  // lands packed in scratch, then goes to its two places
      s.recv(child, buf, run_bytes(p, sub), tag);
      std::size_t at = 0;
      for (const RankRun& run : patterns::real_runs(n, root, sub)) {
        const Block b = patterns::run_block(p.count(), n, run);
        s.copy(p.recv_at(b), buf.plus(at), p.bytes(b));
        at += p.bytes(b);
      }
    }
    co_yield s.step("gather", patterns::ceil_log2(c - v));
  }
  if (v == 0) {
    co_yield s.step("gather", 0);  // a lone root's copy
    co_return;
  }
  const int parent = patterns::to_real(patterns::binomial_parent(n, v), root, n);
  co_yield s.send(parent, buf, run_bytes(p, patterns::binomial_subtree(n, v)), tag)
      .step("send", patterns::ceil_log2(v & -v));
}

}  // namespace collscope::schedules
