// Linear scatter (MPICH's MPIR_Scatter_intra_linear, Open MPI's "basic_linear"): the
// root sends every other rank its block straight from its send buffer, all at once.
//
//   N = 4, root 2, sendbuf [b0 b1 b2 b3]:   2 -b0-> 0,  2 -b1-> 1,  2 -b3-> 3
//                                           (one round; b2 copied locally, or in place)
//
// Per rank: receives its block (not the root); the root sends the N-1 other blocks in
// N-1 messages. Limits: none; the root's link carries everything in one round.
#include <vector>

#include "collscope/patterns/block.hpp"
#include "collscope/scatter.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::block_of;

enum : std::uint32_t { kTagLinear = 0 };

void send_all(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  std::vector<Request> sends;
  for (int p = 0; p < n; ++p) {
    if (p == a.root) continue;
    const Block b = block_of(a.count, n, p);
    sends.push_back(comm.isend(p, at(a.sendbuf, b, elem), b.count * elem, kTagLinear));
  }
  const Block own = block_of(a.count, n, a.root);
  if (a.recvbuf != at(a.sendbuf, own, elem))  // out of place
    comm.reducer().copy(a.recvbuf, at(a.sendbuf, own, elem), own.count * elem);
  comm.wait_all(sends);
}

}  // namespace

void scatter_linear(Comm& comm, const CollArgs& a) {
  comm.step("scatter", 0);
  if (comm.rank() == a.root) return send_all(comm, a);
  const Block b = block_of(a.count, comm.size(), comm.rank());
  Request req = comm.irecv(a.root, a.recvbuf, b.count * a.elem_size(), kTagLinear);
  comm.wait(req);
}

}  // namespace collscope
