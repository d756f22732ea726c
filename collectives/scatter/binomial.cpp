// Binomial-tree scatter (MPICH's MPIR_Scatter_intra_binomial, Open MPI's "binomial"):
// the binomial gather run backwards. On virtual ranks v = (rank - root) mod N
// (patterns/binomial.hpp) the subtree of v is the run of virtual ranks [v, v + size):
// each rank receives its subtree's blocks from its parent in one message, packed in
// virtual order, keeps its own (the first) and sends each child its subtree's part,
// farthest child first.
//
//   N = 6, root 0:             round 0: 0 -b4b5-> 4
//     0 -+- 4 - 5              round 1: 0 -b2b3-> 2, 4 -b5-> 5
//        +- 2 - 3              round 2: 0 -b1-> 1,   2 -b3-> 3
//        +- 1
//
// Blocks are indexed by real rank, so with root != 0 a subtree's blocks can wrap past
// block N-1 to block 0 (root 3 of 6: the subtree v 2..3 is real 5, 0). The root sends
// each child's subtree straight from its send buffer, except the one child (at most
// one) whose subtree wraps: its two pieces are packed in scratch first.
//
// Per rank: receives its subtree's blocks (not the root) in one message, sends each
// child its subtree's blocks in one message. Limits: none; scratch up to the subtree's
// blocks (at most the vector) on inner ranks.
#include <algorithm>
#include <string>
#include <vector>

#include "collscope/scratch_limit.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/scatter.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::RankRun;

enum : std::uint32_t { kTagDown = 0 };
enum : int { kSlotSubtree = 0, kSlotWrapped = 1 };

std::size_t run_elems(const CollArgs& a, int n, RankRun virt) {
  return patterns::virtual_run_elems(a.count, n, a.root, virt);
}

bool wraps(const CollArgs& a, int n, RankRun virt) { return patterns::run_wraps(n, a.root, virt); }

// Where the blocks of a virtual run that does not wrap sit in the full vector.
Block unwrapped_blocks(const CollArgs& a, int n, RankRun virt) {
  return patterns::run_block(a.count, n, patterns::real_runs(n, a.root, virt)[0]);
}

std::size_t scratch_bytes(int n, int v, const CollArgs& a) {
  return patterns::binomial_staging_elems(a.count, n, a.root, v) * a.elem_size();
}

// Packs a wrapped subtree's blocks in virtual order: real run 0, then real run 1.
const std::byte* pack_wrapped(Comm& comm, const CollArgs& a, RankRun virt) {
  const std::size_t elem = a.elem_size();
  auto* packed = static_cast<std::byte*>(
      comm.scratch(kSlotWrapped, run_elems(a, comm.size(), virt) * elem));
  std::byte* dst = packed;
  for (const RankRun& run : patterns::real_runs(comm.size(), a.root, virt)) {
    const Block b = patterns::run_block(a.count, comm.size(), run);
    comm.reducer().copy(dst, at(a.sendbuf, b, elem), b.count * elem);
    dst += b.count * elem;
  }
  return packed;
}

void scatter_from_root(Comm& comm, const CollArgs& a, const std::vector<int>& children) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  std::vector<Request> sends;
  int k = 0;
  for (int c : children) {
    comm.step("send", k++);
    const RankRun sub = patterns::binomial_subtree(n, c);
    const std::byte* src = wraps(a, n, sub) ? pack_wrapped(comm, a, sub)
                                            : at(a.sendbuf, unwrapped_blocks(a, n, sub), elem);
    const std::size_t bytes = run_elems(a, n, sub) * elem;
    sends.push_back(comm.isend(patterns::to_real(c, a.root, n), src, bytes, kTagDown));
  }
  const Block own = patterns::block_of(a.count, n, a.root);
  if (a.recvbuf != at(a.sendbuf, own, elem))  // out of place
    comm.reducer().copy(a.recvbuf, at(a.sendbuf, own, elem), own.count * elem);
  comm.wait_all(sends);
}

// Inner non-root rank: the subtree arrives packed; keep the first block, pass the rest on.
void scatter_subtree(Comm& comm, const CollArgs& a, int v, const std::vector<int>& children) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  const std::size_t total = run_elems(a, n, patterns::binomial_subtree(n, v));
  auto* buf = static_cast<std::byte*>(comm.scratch(kSlotSubtree, total * elem));
  const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
  Request req = comm.irecv(parent, buf, total * elem, kTagDown);
  comm.wait(req);
  std::vector<Request> sends;
  int k = 0;
  for (int c : children) {
    comm.step("send", k++);
    const std::size_t offset = run_elems(a, n, {v, c - v});
    const std::size_t elems = run_elems(a, n, patterns::binomial_subtree(n, c));
    sends.push_back(comm.isend(patterns::to_real(c, a.root, n), buf + offset * elem,
                               elems * elem, kTagDown));
  }
  comm.reducer().copy(a.recvbuf, buf, patterns::block_of(a.count, n, comm.rank()).count * elem);
  comm.wait_all(sends);
}

}  // namespace

std::optional<std::string> scatter_binomial_constraint(int nranks, const CollArgs& a) {
  std::size_t need = 0;
  for (int v = 0; v < nranks; ++v) need = std::max(need, scratch_bytes(nranks, v, a));
  return scratch_constraint("scatter", "binomial", need, nranks, a);
}

void scatter_binomial(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const int v = patterns::to_virtual(comm.rank(), a.root, n);
  const std::vector<int> children = patterns::binomial_children(n, v);
  comm.step("receive", 0);
  if (v == 0) return scatter_from_root(comm, a, children);
  if (!children.empty()) return scatter_subtree(comm, a, v, children);
  // A leaf receives its own block straight into place.
  const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
  const std::size_t bytes = patterns::block_of(a.count, n, comm.rank()).count * a.elem_size();
  Request req = comm.irecv(parent, a.recvbuf, bytes, kTagDown);
  comm.wait(req);
}

}  // namespace collscope
