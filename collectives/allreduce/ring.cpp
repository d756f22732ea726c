// Ring allreduce = ring reduce-scatter + ring allgather (Patarasuk & Yuan 2009; the
// NCCL and Open MPI "ring").
//
//   N = 4, blocks A B C D, rank r sends to r+1:
//   reduce-scatter, step k: rank r sends block r-k, receives block r-k-1, reduces it
//     step 0:  0:A->1   1:B->2   2:C->3   3:D->0
//     step 1:  0:D->1   1:A->2   2:B->3   3:C->0      (blocks now hold 2 contributions)
//     step 2:  0:C->1   1:D->2   2:A->3   3:B->0      -> rank r owns block r+1, reduced
//   allgather, step k: rank r sends block r+1-k, receives block r-k (already final)
//
// Every rank sends 2(N-1) blocks: 2(N-1)/N of the vector when blocks are even.
// Limits: none (any N, any count; blocks follow the uneven rule, empty ones are skipped).
#include <algorithm>

#include "collscope/allreduce.hpp"
#include "collscope/patterns/ring.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::block_of;

enum : std::uint32_t { kTagReduceScatter = 1, kTagAllgather = 2 };


void reduce_scatter(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  const std::size_t elem = a.elem_size();
  std::size_t max_block = block_of(a.count, n, 0).count;
  std::byte* incoming = static_cast<std::byte*>(comm.scratch(0, max_block * elem));
  for (int k = 0; k < n - 1; ++k) {
    comm.step("reduce-scatter", k);
    const Block out = block_of(a.count, n, patterns::ring_rs_send_block(r, n, k));
    const Block in = block_of(a.count, n, patterns::ring_rs_recv_block(r, n, k));
    // Step 0 sends the untouched input; later steps send what the last step reduced.
    const std::byte* src = k == 0 ? at(a.sendbuf, out, elem) : at(a.recvbuf, out, elem);
    Request reqs[2] = {comm.irecv(prev, incoming, in.count * elem, kTagReduceScatter),
                       comm.isend(next, src, out.count * elem, kTagReduceScatter)};
    comm.wait(reqs[0]);
    comm.reducer().reduce(at(a.recvbuf, in, elem), at(a.sendbuf, in, elem), incoming,
                          in.count, a.dtype, a.op);
    comm.wait(reqs[1]);
  }
}

void allgather(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const int next = patterns::ring_next(r, n), prev = patterns::ring_prev(r, n);
  const std::size_t elem = a.elem_size();
  for (int k = 0; k < n - 1; ++k) {
    comm.step("allgather", k);
    const Block out = block_of(a.count, n, patterns::ring_ag_send_block(r, n, k));
    const Block in = block_of(a.count, n, patterns::ring_ag_recv_block(r, n, k));
    Request reqs[2] = {comm.irecv(prev, at(a.recvbuf, in, elem), in.count * elem, kTagAllgather),
                       comm.isend(next, at(a.recvbuf, out, elem), out.count * elem,
                                  kTagAllgather)};
    comm.wait_all(reqs);
  }
}

}  // namespace

void allreduce_ring(Comm& comm, const CollArgs& a) {
  if (comm.size() == 1) {
    if (!a.in_place()) comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
    return;
  }
  reduce_scatter(comm, a);
  allgather(comm, a);
}

}  // namespace collscope
