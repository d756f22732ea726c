// Exact volume of each reduce-scatter algorithm: bytes and messages one rank sends and
// receives in one call, for any N and count, uneven blocks included. Written from the
// schedules, apart from the code that sends, so the counting transport can check both.
// A message of zero bytes is never sent and so never counted.
#include "collscope/patterns/block.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/reduce_scatter.hpp"

namespace collscope {
namespace {

std::uint64_t block_bytes(const CollArgs& a, int n, int i) {
  return patterns::block_of(a.count, n, patterns::mod(i, n)).count * a.elem_size();
}

std::uint64_t bytes_of(const CollArgs& a, patterns::Block b) { return b.count * a.elem_size(); }

}  // namespace

// Sends every block but its own, receives every block but r-1, one message each.
RankVolume reduce_scatter_ring_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (n == 1) return v;
  for (int b = 0; b < n; ++b) {
    if (b != r) v.send(block_bytes(a, n, b));
    if (b != patterns::mod(r - 1, n)) v.recv(block_bytes(a, n, b));
  }
  return v;
}

// Folded pair (2v, 2v+1): the whole vector up, block 2v back. Virtual ranks: the
// halving's ranges, mapped to the N-block partition.
RankVolume reduce_scatter_halving_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (n == 1) return v;
  const patterns::HdLayout l = patterns::hd_layout(n, r);
  if (l.role == patterns::FoldRole::sender) {
    v.send(a.bytes());
    v.recv(block_bytes(a, n, r));
    return v;
  }
  if (l.role == patterns::FoldRole::absorber) {
    v.recv(a.bytes());
    v.send(block_bytes(a, n, l.fold_peer));
  }
  for (const patterns::HdStep& s : patterns::hd_reduce_scatter_steps(n, l.vrank)) {
    v.send(bytes_of(a, patterns::folded_range(a.count, n, s.send_first, s.send_len)));
    v.recv(bytes_of(a, patterns::folded_range(a.count, n, s.recv_first, s.recv_len)));
  }
  return v;
}

}  // namespace collscope
