// Linear gather (MPICH's MPIR_Gather_intra_linear, Open MPI's "basic_linear"): every
// rank sends its block straight to the root, which receives them all at once, each into
// its place in the receive buffer.
//
//   N = 4, root 2:   0 -b0-> 2,  1 -b1-> 2,  3 -b3-> 2    (one round)
//                    root: recvbuf = [b0 b1 b2 b3]  (b2 copied locally, or in place)
//
// Per rank: sends its block (not the root); the root receives the N-1 other blocks in
// N-1 messages. Limits: none; the root's link carries everything in one round, which
// is the fastest at small N and the slowest at large N.
#include <vector>

#include "collscope/gather.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::block_of;

enum : std::uint32_t { kTagLinear = 0 };

void receive_all(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  const Block own = block_of(a.count, n, a.root);
  if (a.sendbuf != at(a.recvbuf, own, elem))  // out of place
    comm.reducer().copy(at(a.recvbuf, own, elem), a.sendbuf, own.count * elem);
  std::vector<Request> recvs;
  for (int p = 0; p < n; ++p) {
    if (p == a.root) continue;
    const Block b = block_of(a.count, n, p);
    recvs.push_back(comm.irecv(p, at(a.recvbuf, b, elem), b.count * elem, kTagLinear));
  }
  comm.wait_all(recvs);
}

}  // namespace

void gather_linear(Comm& comm, const CollArgs& a) {
  comm.step("gather", 0);
  if (comm.rank() == a.root) return receive_all(comm, a);
  const Block b = block_of(a.count, comm.size(), comm.rank());
  Request req = comm.isend(a.root, a.sendbuf, b.count * a.elem_size(), kTagLinear);
  comm.wait(req);
}

}  // namespace collscope
