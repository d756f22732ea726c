// Ring all-to-all, store and forward: every rank talks only to its ring neighbours, and
// blocks travel hop by hop to their destination (the seeds' "Ring-based" all-to-all;
// the linear-array algorithm of Bokhari 1991 run on a ring in one direction).
//
//   N = 4, block "s>d" leaves rank s for rank d; rank r sends to r+1:
//   step 0: each rank sends its 3 outgoing blocks, nearest destination first
//     0: [0>1 0>2 0>3] -> 1      1: [1>2 1>3 1>0] -> 2   ...
//     rank 1 keeps 0>1, rank 2 keeps 1>2, ...
//   step 1: each rank forwards the 2 blocks it did not keep
//     1: [0>2 0>3] -> 2          2: [1>3 1>0] -> 3       ...
//   step 2: the last block of each origin takes its third hop
//     2: [0>3] -> 3              3: [1>0] -> 0           ...
//
// What it sends: at step k (0..N-2) one message of N-1-k blocks, those that left rank
// r-k addressed to r+1 .. r+N-1-k; in all N(N-1)/2 blocks in N-1 messages per rank,
// (N/2) x what pairwise sends (a block going d ranks ahead is sent d times). The seeds'
// "D/N per step" holds for the first hop only.
// Limits: needs 2 (N-1) blocks of scratch per rank (the message being forwarded and the
// one arriving).
#include "collscope/scratch_limit.hpp"
#include "collscope/alltoall.hpp"
#include "collscope/patterns/alltoall_ring.hpp"
#include "blocks.hpp"

namespace collscope {
namespace {

enum : std::uint32_t { kTagRing = 11 };

// Step 0's message: the N-1 blocks of the send buffer addressed to r+1 .. r+N-1.
void pack_outgoing(Comm& comm, const CollArgs& a, std::byte* msg) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t blk = detail::alltoall_block_bytes(a);
  const auto* in = static_cast<const std::byte*>(a.sendbuf);
  for (int i = 0; i < patterns::a2a_ring_blocks_at(n, 0); ++i) {
    const auto dest = static_cast<std::size_t>(patterns::a2a_ring_send_dest(r, n, i));
    comm.reducer().copy(msg + static_cast<std::size_t>(i) * blk, in + dest * blk, blk);
  }
}

}  // namespace

std::optional<std::string> alltoall_ring_constraint(int nranks, const CollArgs& a) {
  return scratch_constraint("alltoall", "ring", 2 * detail::alltoall_blocks_bytes(a, nranks - 1),
                            nranks, a);
}

void alltoall_ring(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t blk = detail::alltoall_block_bytes(a);
  auto* out = static_cast<std::byte*>(a.recvbuf);
  const std::size_t own = static_cast<std::size_t>(r) * blk;
  if (!a.in_place())
    comm.reducer().copy(out + own, static_cast<const std::byte*>(a.sendbuf) + own, blk);
  if (n == 1) return;
  const std::size_t msg_bytes = detail::alltoall_blocks_bytes(a, n - 1);
  std::byte* buf[2] = {static_cast<std::byte*>(comm.scratch(0, msg_bytes)),
                       static_cast<std::byte*>(comm.scratch(1, msg_bytes))};
  pack_outgoing(comm, a, buf[0]);  // before any receive can overwrite an in-place input
  const std::byte* outgoing = buf[0];
  for (int k = 0; k < patterns::a2a_ring_steps(n); ++k) {
    comm.step("ring", k);
    std::byte* incoming = buf[(k + 1) % 2];
    const std::size_t bytes =
        detail::alltoall_blocks_bytes(a, patterns::a2a_ring_blocks_at(n, k));
    Request reqs[2] = {
        comm.irecv(patterns::a2a_ring_prev(r, n), incoming, bytes, kTagRing),
        comm.isend(patterns::a2a_ring_next(r, n), outgoing, bytes, kTagRing)};
    comm.wait_all(reqs);
    // The first block is ours; the rest goes on at the next step, as it arrived.
    const auto origin = static_cast<std::size_t>(patterns::a2a_ring_recv_origin(r, n, k));
    comm.reducer().copy(out + origin * blk, incoming, blk);
    outgoing = incoming + blk;
  }
}

}  // namespace collscope
