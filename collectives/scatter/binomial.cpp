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

Steps scatter_binomial(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const int v = patterns::to_virtual(p.rank(), root, n);
  const int rounds = patterns::ceil_log2(n);
  const std::vector<int> children = patterns::binomial_children(n, v);  // farthest first
  const Block own = patterns::block_of(p.count(), n, p.rank());
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  const int parent = v == 0 ? -1 : patterns::to_real(patterns::binomial_parent(n, v), root, n);
  const int my_step = v == 0 ? -1 : rounds - 1 - patterns::ceil_log2(v & -v);
  if (v != 0 && children.empty()) {  // a leaf receives its own block straight into place
    co_yield s.recv(parent, Plan::recv(), p.bytes(own), tag).step("scatter", my_step);
    co_return;
  }
  const std::size_t staging = patterns::binomial_staging_elems(p.count(), n, root, v) * p.elem();
  const BufRef buf = staging > 0 ? p.scratch(staging) : BufRef{};
  if (v == 0) {  // the own block, and the one wrapped subtree packed, before any send
    s.copy(Plan::recv(), p.send_at(own), p.bytes(own));
    for (int c : children) {
      const RankRun sub = patterns::binomial_subtree(n, c);
      if (!patterns::run_wraps(n, root, sub)) continue;
      std::size_t at = 0;
      for (const RankRun& run : patterns::real_runs(n, root, sub)) {
        const Block b = patterns::run_block(p.count(), n, run);
        s.copy(buf.plus(at), p.send_at(b), p.bytes(b));
        at += p.bytes(b);
      }
    }
  } else {  // the subtree arrives packed; the own block is its first
    s.recv(parent, buf, run_bytes(p, patterns::binomial_subtree(n, v)), tag);
    s.copy(Plan::recv(), buf, p.bytes(own));
  }
  co_yield s.step("scatter", my_step);
  for (int c : children) {
    const RankRun sub = patterns::binomial_subtree(n, c);
    BufRef from = buf.plus(run_bytes(p, {v, c - v}));  // packed behind nearer subtrees
    if (v == 0)
      from = patterns::run_wraps(n, root, sub)
                 ? buf
                 : p.send_at(patterns::run_block(p.count(), n, patterns::real_runs(n, root, sub)[0]));
    s.send(patterns::to_real(c, root, n), from, run_bytes(p, sub), tag);
    co_yield s.step("scatter", rounds - 1 - patterns::ceil_log2(c - v));
  }
}

}  // namespace collscope::schedules
