// Binomial-tree broadcast (MPICH's MPIR_Bcast_intra_binomial; Thakur, Rabenseifner &
// Gropp 2005). The whole vector goes down a binomial tree rooted at args.root, on virtual
// ranks v = (rank - root) mod N (patterns/binomial.hpp). Open MPI's broadcast "binomial"
// has the same degrees on another tree (broadcast_binomial_strided): its traffic differs
// from N = 4 on.
//
//   N = 6, root 0:             step 0: 0 -> 4
//     0 -+- 4 - 5              step 1: 0 -> 2, 4 -> 5
//        +- 2 - 3              step 2: 0 -> 1, 2 -> 3
//        +- 1
//   the edge to child v+m is used in step K-1-log2(m), K = ceil(log2 N): every rank
//   receives the vector once and sends it once per child, farthest child first.
//
// Per rank: receives count (root: nothing), sends count x children (root: ceil(log2 N)
// children). Limits: none (any N, any count, any root); latency-bound sizes are its
// strength, large ones are better served by chain or scatter_allgather.
#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps broadcast_binomial(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const int v = patterns::to_virtual(p.rank(), root, n);
  const int rounds = patterns::ceil_log2(n);  // ceil(log2 N)
  const std::size_t bytes = p.count() * p.elem();
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  // The root sends from its send buffer and copies it to its receive buffer meanwhile.
  const BufRef from = v == 0 ? Plan::send() : Plan::recv();
  if (v == 0) s.copy(Plan::recv(), Plan::send(), bytes);
  else {
    const int parent = patterns::to_real(patterns::binomial_parent(n, v), root, n);
    s.recv(parent, Plan::recv(), bytes, tag);
    co_yield s.step("receive", rounds - 1 - patterns::ceil_log2(v & -v));
  }
  for (int child : patterns::binomial_children(n, v)) {
    s.send(patterns::to_real(child, root, n), from, bytes, tag);
    co_yield s.step("send", rounds - 1 - patterns::ceil_log2(child - v));
  }
  co_yield s.step("done", rounds);  // the root's copy, when it has no children (N = 1)
}

}  // namespace collscope::schedules
