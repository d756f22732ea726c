// Exact volume of each allgather algorithm: bytes and messages one rank sends and
// receives in one call, for any N and count, uneven blocks included. Written from the
// schedules, apart from the code that sends, so the counting transport can check both.
// A message of zero bytes is never sent and so never counted.
#include "collscope/allgather.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/patterns/bruck.hpp"
#include "collscope/patterns/recursive_doubling.hpp"

namespace collscope {
namespace {

std::uint64_t block_bytes(const CollArgs& a, int n, int i) {
  return patterns::block_of(a.count, n, patterns::mod(i, n)).count * a.elem_size();
}

std::uint64_t bytes_of(const CollArgs& a, patterns::Block b) { return b.count * a.elem_size(); }

// The unfold: everything but block `b`, as the bytes before it and the bytes after it.
struct AroundBlock {
  std::uint64_t before = 0, after = 0;
};

AroundBlock around_block(const CollArgs& a, int n, int b) {
  const patterns::Block own = patterns::block_of(a.count, n, b);
  return {own.offset * a.elem_size(), (a.count - own.offset - own.count) * a.elem_size()};
}

}  // namespace

// Sends every block but r+1, receives every block but r, one message each.
RankVolume allgather_ring_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (n == 1) return v;
  for (int b = 0; b < n; ++b) {
    if (b != patterns::mod(r + 1, n)) v.send(block_bytes(a, n, b));
    if (b != r) v.recv(block_bytes(a, n, b));
  }
  return v;
}

// Folded-out rank 2v: its block to 2v+1, then the rest back in two messages. Virtual
// ranks: the doubling's ranges; absorber 2v+1 adds the fold and the unfold.
RankVolume allgather_recursive_doubling_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (n == 1) return v;
  const patterns::HdLayout l = patterns::hd_layout(n, r);
  if (l.role == patterns::FoldRole::sender) {
    const AroundBlock rest = around_block(a, n, r);
    v.send(block_bytes(a, n, r));
    v.recv(rest.before);
    v.recv(rest.after);
    return v;
  }
  if (l.role == patterns::FoldRole::absorber) {
    const AroundBlock rest = around_block(a, n, l.fold_peer);
    v.recv(block_bytes(a, n, l.fold_peer));
    v.send(rest.before);
    v.send(rest.after);
  }
  for (const patterns::HdStep& s : patterns::hd_allgather_steps(n, l.vrank)) {
    v.send(bytes_of(a, patterns::folded_range(a.count, n, s.send_first, s.send_len)));
    v.recv(bytes_of(a, patterns::folded_range(a.count, n, s.recv_first, s.recv_len)));
  }
  return v;
}

// Step k: the first m rotated blocks out, m rotated blocks from position d in.
RankVolume allgather_bruck_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  for (int k = 0; k < patterns::bruck_num_steps(n); ++k) {
    const patterns::BruckStep s = patterns::bruck_step(r, n, k);
    v.send(bytes_of(a, patterns::rotated_range(a.count, n, r, 0, s.nblocks)));
    v.recv(bytes_of(a, patterns::rotated_range(a.count, n, r, s.distance, s.nblocks)));
  }
  return v;
}

}  // namespace collscope
