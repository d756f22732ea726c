// Binomial-tree broadcast (MPICH's MPIR_Bcast_intra_binomial, Open MPI's "binomial";
// Thakur, Rabenseifner & Gropp 2005). The whole vector goes down a binomial tree rooted
// at args.root, on virtual ranks v = (rank - root) mod N (patterns/binomial.hpp).
//
//   N = 6, root 0:             round 0: 0 -> 4
//     0 -+- 4 - 5              round 1: 0 -> 2, 4 -> 5
//        +- 2 - 3              round 2: 0 -> 1, 2 -> 3
//        +- 1
//   every rank receives the vector once and sends it once per child, farthest
//   child first: ceil(log2 N) rounds of the whole vector.
//
// Per rank: receives count (root: nothing), sends count x children (root: ceil(log2 N)
// children). Limits: none (any N, any count, any root); latency-bound sizes are its
// strength, large ones are better served by chain or scatter_allgather.
#include <vector>

#include "collscope/broadcast.hpp"
#include "collscope/patterns/binomial.hpp"

namespace collscope {
namespace {
enum : std::uint32_t { kTagDown = 0 };
}

void broadcast_binomial(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const int v = patterns::to_virtual(r, a.root, n);
  comm.step("receive", 0);
  if (v == 0) {
    if (!a.in_place()) comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
  } else {
    const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
    Request req = comm.irecv(parent, a.recvbuf, a.bytes(), kTagDown);
    comm.wait(req);
  }
  std::vector<Request> sends;
  int k = 0;
  for (int child : patterns::binomial_children(n, v)) {
    comm.step("send", k++);
    sends.push_back(
        comm.isend(patterns::to_real(child, a.root, n), a.recvbuf, a.bytes(), kTagDown));
  }
  comm.wait_all(sends);
}

}  // namespace collscope
