// Ring reduce-scatter (Patarasuk & Yuan 2009; the first half of the ring allreduce),
// shifted by one block so that rank r ends with block r, as MPI's reduce-scatter asks.
//
//   N = 4, blocks A B C D, rank r sends to r+1; step k: send the partial sum of block
//   r-k-1, receive the partial sum of block r-k-2 and add this rank's own part to it
//     step 0:  0:D->1   1:A->2   2:B->3   3:C->0     (own input blocks)
//     step 1:  0:C->1   1:D->2   2:A->3   3:B->0     (two contributions each)
//     step 2:  0:B->1   1:C->2   2:D->3   3:A->0     -> rank r adds its part of block r
//
// Every rank sends N-1 blocks (all but its own) and receives N-1 (all but block r-1):
// (N-1)/N of the vector when blocks are even, in N-1 messages each way.
// Limits: none (any N, any count; empty blocks are skipped). Partial sums live in two
// scratch blocks (one received into while the other is sent); in place, the send
// buffer is never written but for block r, the result.
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/ring_own_block.hpp"
#include "collscope/reduce_scatter.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::block_of;

enum : std::uint32_t { kTagRing = 1 };

}  // namespace

void reduce_scatter_ring(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = a.elem_size();
  if (n == 1) return comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  const std::size_t max_bytes = block_of(a.count, n, 0).count * elem;
  std::byte* scratch = static_cast<std::byte*>(comm.scratch(0, 2 * max_bytes));
  std::byte* partial[2] = {scratch, scratch + max_bytes};
  for (int k = 0; k < n - 1; ++k) {
    comm.step("reduce-scatter ring", k);
    const Block out = block_of(a.count, n, patterns::own_ring_rs_send_block(r, n, k));
    const Block in = block_of(a.count, n, patterns::own_ring_rs_recv_block(r, n, k));
    // Step 0 sends untouched input; later steps forward the partial sum made last step.
    const std::byte* src = k == 0 ? at(a.sendbuf, out, elem) : partial[(k + 1) % 2];
    std::byte* incoming = partial[k % 2];
    Request reqs[2] = {comm.irecv(prev, incoming, in.count * elem, kTagRing),
                       comm.isend(next, src, out.count * elem, kTagRing)};
    comm.wait(reqs[0]);
    void* sum = k == n - 2 ? a.recvbuf : incoming;  // the last block received is block r
    comm.reducer().reduce(sum, at(a.sendbuf, in, elem), incoming, in.count, a.dtype, a.op);
    comm.wait(reqs[1]);
  }
}

}  // namespace collscope
