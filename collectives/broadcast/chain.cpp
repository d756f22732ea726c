// Pipelined chain broadcast (Open MPI's "pipeline"/"chain" with one chain; the classic
// store-and-forward pipeline). The vector is cut into segments of --segment bytes
// (rounded down to whole elements, at least one); segment c leaves the root, and every
// rank forwards segment c to the next one as soon as it has it, while the segments
// before it travel further down the chain.
//
//   N = 4, root 1, 3 segments:   chain 1 -> 2 -> 3 -> 0
//     step 0: 1 -s0-> 2
//     step 1: 1 -s1-> 2 -s0-> 3
//     step 2: 1 -s2-> 2 -s1-> 3 -s0-> 0
//     ...     (N - 1 + segments - 1 steps in all)
//
// At most 16 segments are in flight on each link (receives posted ahead, sends not yet
// complete), which keeps the MPI matching queues short at small segment sizes.
//
// Per rank: receives the vector once (not the root) and sends it once (not the last
// rank), each in ceil(count / segment) messages. Limits: none (any N, count, root); the
// latency grows with N, so it wins at large sizes and few ranks.
#include <utility>
#include <vector>

#include "collscope/broadcast.hpp"
#include "collscope/patterns/binomial.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;

enum : std::uint32_t { kTagChain = 0 };
// Segments in flight each way. Posting every segment at once makes Open MPI's matching
// quadratic in the number of segments (tens of thousands at small --segment).
constexpr std::size_t kWindow = 16;

}  // namespace

void broadcast_chain(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const int prev = patterns::chain_prev(r, a.root, n), next = patterns::chain_next(r, a.root, n);
  const std::size_t elem = a.elem_size();
  const std::size_t seg = patterns::segment_elems(a.segment_bytes, elem);
  const std::size_t nseg = patterns::num_segments(a.count, seg);
  auto piece = [&](std::size_t c) {
    const Block s = patterns::segment_of(a.count, seg, c);
    return std::pair{at(a.recvbuf, s, elem), s.count * elem};
  };
  if (prev < 0 && !a.in_place()) comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
  std::vector<Request> recvs(nseg), sends(nseg);
  auto post_recv = [&](std::size_t c) {
    if (prev < 0 || c >= nseg) return;
    const auto [p, bytes] = piece(c);
    recvs[c] = comm.irecv(prev, p, bytes, kTagChain);
  };
  for (std::size_t c = 0; c < kWindow; ++c) post_recv(c);
  for (std::size_t c = 0; c < nseg; ++c) {
    comm.step("segment", static_cast<int>(c));
    comm.wait(recvs[c]);  // nothing to wait for at the root
    post_recv(c + kWindow);
    if (next < 0) continue;
    if (c >= kWindow) comm.wait(sends[c - kWindow]);
    const auto [p, bytes] = piece(c);
    sends[c] = comm.isend(next, p, bytes, kTagChain);
  }
  comm.wait_all(sends);
}

}  // namespace collscope
