// Exact volume of each all-to-all algorithm: bytes and messages one rank sends and
// receives in one call, for any N and count (count is per peer: one block = count
// elements). Written from the schedules in patterns/, apart from the code that sends.
// A message of zero bytes (count 0) is never sent and so never counted.
#include "collscope/alltoall.hpp"
#include "collscope/patterns/alltoall_bruck.hpp"
#include "collscope/patterns/alltoall_ring.hpp"
#include "collscope/patterns/pairwise.hpp"

namespace collscope {
namespace {

std::uint64_t blocks_bytes(const CollArgs& a, int blocks) {
  return static_cast<std::uint64_t>(blocks) * a.bytes();
}

}  // namespace

// One block to and from each of the N-1 others, one message each.
RankVolume alltoall_pairwise_theory(int, int n, const CollArgs& a) {
  RankVolume v;
  for (int k = 1; k <= patterns::pairwise_steps(n); ++k) {
    v.send(blocks_bytes(a, 1));
    v.recv(blocks_bytes(a, 1));
  }
  return v;
}

// Step k: one message of N-1-k blocks each way; N(N-1)/2 blocks in N-1 messages.
RankVolume alltoall_ring_theory(int, int n, const CollArgs& a) {
  RankVolume v;
  for (int k = 0; k < patterns::a2a_ring_steps(n); ++k) {
    v.send(blocks_bytes(a, patterns::a2a_ring_blocks_at(n, k)));
    v.recv(blocks_bytes(a, patterns::a2a_ring_blocks_at(n, k)));
  }
  return v;
}

// Step k: one message each way of the positions i < N with bit k set; ceil(log2 N)
// messages holding sum_{i<N} popcount(i) blocks.
RankVolume alltoall_bruck_theory(int, int n, const CollArgs& a) {
  RankVolume v;
  for (int k = 0; k < patterns::a2a_bruck_steps(n); ++k) {
    v.send(blocks_bytes(a, patterns::a2a_bruck_blocks_at(n, k)));
    v.recv(blocks_bytes(a, patterns::a2a_bruck_blocks_at(n, k)));
  }
  return v;
}

}  // namespace collscope
