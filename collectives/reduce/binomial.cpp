// Binomial-tree reduce (MPICH's MPIR_Reduce_intra_binomial, Open MPI's "binomial"):
// the broadcast's binomial tree run backwards. On virtual ranks v = (rank - root) mod N
// (patterns/binomial.hpp) every rank receives each child's partial result, reduces it
// into its own, nearest child first (its subtree finishes first), and sends the total
// to its parent.
//
//   N = 6, root 0:             round 0: 1 -> 0, 3 -> 2, 5 -> 4
//     0 -+- 4 - 5              round 1: 2 -> 0  (x2+x3)
//        +- 2 - 3              round 2: 4 -> 0  (x4+x5)
//        +- 1                  rank 0: ((x0+x1) + (x2+x3)) + (x4+x5)
//
// Per rank: sends the whole vector once (not the root), receives it once per child.
// Scratch: a partial result (not at the root, which reduces into its receive buffer)
// and two receive buffers, one child's vector arriving while the last one is reduced.
// Limits: the op must be commutative and associative (all of collscope's are; with
// root != 0 the reduction order is not rank order, so floats may round differently
// from a rank-ordered sum).
#include <algorithm>
#include <string>
#include <vector>

#include "collscope/scratch_limit.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/reduce.hpp"

namespace collscope {
namespace {

enum : std::uint32_t { kTagUp = 0 };
enum : int { kSlotPartial = 0, kSlotInbox = 1 };  // inboxes: slots 1 and 2

// Scratch bytes at virtual rank v: a partial (inner non-root ranks) and up to 2 inboxes.
std::size_t scratch_bytes(int n, int v, const CollArgs& a) {
  const std::size_t children = patterns::binomial_children(n, v).size();
  if (children == 0) return 0;
  const std::size_t buffers = (v == 0 ? 0u : 1u) + std::min<std::size_t>(children, 2);
  return buffers * a.bytes();
}

// Receives every child's vector and reduces it into `acc`; returns the result, which is
// still `mine` where there is no child.
const void* reduce_children(Comm& comm, const CollArgs& a, const std::vector<int>& children,
                            const void* mine, void* acc) {
  const int n = comm.size();
  auto inbox = [&](std::size_t i) {
    return comm.scratch(kSlotInbox + static_cast<int>(i % 2), a.bytes());
  };
  auto post = [&](std::size_t i) {
    return comm.irecv(patterns::to_real(children[i], a.root, n), inbox(i), a.bytes(), kTagUp);
  };
  std::vector<Request> recvs(children.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(children.size(), 2); ++i) recvs[i] = post(i);
  const void* partial = mine;
  for (std::size_t i = 0; i < children.size(); ++i) {
    comm.step("reduce", static_cast<int>(i));
    comm.wait(recvs[i]);
    comm.reducer().reduce(acc, partial, inbox(i), a.count, a.dtype, a.op);
    partial = acc;
    if (i + 2 < children.size()) recvs[i + 2] = post(i + 2);  // into the inbox just used
  }
  return partial;
}

}  // namespace

std::optional<std::string> reduce_binomial_constraint(int nranks, const CollArgs& a) {
  std::size_t need = 0;
  for (int v = 0; v < nranks; ++v) need = std::max(need, scratch_bytes(nranks, v, a));
  return scratch_constraint("reduce", "binomial", need, nranks, a);
}

void reduce_binomial(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const int v = patterns::to_virtual(comm.rank(), a.root, n);
  std::vector<int> children = patterns::binomial_children(n, v);
  std::reverse(children.begin(), children.end());  // nearest first: it is ready first
  // The root reduces into its receive buffer; the others (no receive buffer) in scratch.
  void* acc = v == 0 ? a.recvbuf : comm.scratch(kSlotPartial, children.empty() ? 0 : a.bytes());
  const void* result = reduce_children(comm, a, children, a.sendbuf, acc);
  comm.step("send", 0);
  if (v == 0) {
    if (result != a.recvbuf) comm.reducer().copy(a.recvbuf, result, a.bytes());
    return;
  }
  const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
  Request req = comm.isend(parent, result, a.bytes(), kTagUp);
  comm.wait(req);
}

}  // namespace collscope
