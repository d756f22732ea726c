// Binomial-tree gather (MPICH's MPIR_Gather_intra_binomial, Open MPI's "binomial"). On
// virtual ranks v = (rank - root) mod N (patterns/binomial.hpp) the subtree of v is the
// run of virtual ranks [v, v + size): each rank collects its subtree's blocks in virtual
// order (its own first, then each child's subtree behind it) and sends them to its
// parent in one message.
//
//   N = 6, root 0:             round 0: 1 -b1-> 0, 3 -b3-> 2, 5 -b5-> 4
//     0 -+- 4 - 5              round 1: 2 -b2b3-> 0
//        +- 2 - 3              round 2: 4 -b4b5-> 0
//        +- 1
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
#include <algorithm>
#include <string>
#include <vector>

#include "collscope/scratch_limit.hpp"
#include "collscope/gather.hpp"
#include "collscope/patterns/binomial.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::RankRun;

enum : std::uint32_t { kTagUp = 0 };
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

// Inner non-root rank: own block, then every child's subtree, packed in virtual order.
void gather_subtree(Comm& comm, const CollArgs& a, int v, const std::vector<int>& children) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  const std::size_t total = run_elems(a, n, patterns::binomial_subtree(n, v));
  auto* buf = static_cast<std::byte*>(comm.scratch(kSlotSubtree, total * elem));
  std::vector<Request> recvs;
  for (int c : children) {
    const std::size_t offset = run_elems(a, n, {v, c - v});
    const std::size_t elems = run_elems(a, n, patterns::binomial_subtree(n, c));
    recvs.push_back(comm.irecv(patterns::to_real(c, a.root, n), buf + offset * elem,
                               elems * elem, kTagUp));
  }
  comm.reducer().copy(buf, a.sendbuf, patterns::block_of(a.count, n, comm.rank()).count * elem);
  comm.wait_all(recvs);
  comm.step("send", 0);
  const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
  Request req = comm.isend(parent, buf, total * elem, kTagUp);
  comm.wait(req);
}

// Copies the wrapped subtree (virtual order: real run 0, then real run 1) into place.
void unpack_wrapped(Comm& comm, const CollArgs& a, RankRun virt, const std::byte* packed) {
  const std::size_t elem = a.elem_size();
  for (const RankRun& run : patterns::real_runs(comm.size(), a.root, virt)) {
    const Block b = patterns::run_block(a.count, comm.size(), run);
    comm.reducer().copy(at(a.recvbuf, b, elem), packed, b.count * elem);
    packed += b.count * elem;
  }
}

void gather_at_root(Comm& comm, const CollArgs& a, const std::vector<int>& children) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  std::vector<Request> recvs;
  RankRun wrapped{0, 0};
  std::byte* packed = nullptr;
  for (int c : children) {
    const RankRun sub = patterns::binomial_subtree(n, c);
    const std::size_t bytes = run_elems(a, n, sub) * elem;
    std::byte* dst = nullptr;
    if (wraps(a, n, sub)) {
      wrapped = sub;
      dst = packed = static_cast<std::byte*>(comm.scratch(kSlotWrapped, bytes));
    } else {
      dst = at(a.recvbuf, unwrapped_blocks(a, n, sub), elem);
    }
    recvs.push_back(comm.irecv(patterns::to_real(c, a.root, n), dst, bytes, kTagUp));
  }
  const Block own = patterns::block_of(a.count, n, a.root);
  if (a.sendbuf != at(a.recvbuf, own, elem))  // out of place
    comm.reducer().copy(at(a.recvbuf, own, elem), a.sendbuf, own.count * elem);
  comm.wait_all(recvs);
  if (packed) unpack_wrapped(comm, a, wrapped, packed);
}

}  // namespace

std::optional<std::string> gather_binomial_constraint(int nranks, const CollArgs& a) {
  std::size_t need = 0;
  for (int v = 0; v < nranks; ++v) need = std::max(need, scratch_bytes(nranks, v, a));
  return scratch_constraint("gather", "binomial", need, nranks, a);
}

void gather_binomial(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const int v = patterns::to_virtual(comm.rank(), a.root, n);
  const std::vector<int> children = patterns::binomial_children(n, v);
  comm.step("gather", 0);
  if (v == 0) return gather_at_root(comm, a, children);
  if (!children.empty()) return gather_subtree(comm, a, v, children);
  // A leaf sends its own block as it is.
  const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
  const std::size_t bytes = patterns::block_of(a.count, n, comm.rank()).count * a.elem_size();
  Request req = comm.isend(parent, a.sendbuf, bytes, kTagUp);
  comm.wait(req);
}

}  // namespace collscope
