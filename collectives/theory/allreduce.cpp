// Exact volume of each allreduce algorithm: bytes and messages one rank sends and
// receives in one call, for any N and count, uneven blocks included. Written from the
// schedules, apart from the code that sends, so the counting transport can check both.
// A message of zero bytes is never sent and so never counted.
#include "../allreduce/tree_pipeline.hpp"
#include "collscope/allreduce.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/tree.hpp"

namespace collscope {
namespace {

std::uint64_t block_bytes(const CollArgs& a, int nblocks, int i) {
  return patterns::block_of(a.count, nblocks, patterns::mod(i, nblocks)).count * a.elem_size();
}

}  // namespace

// Reduce-scatter: rank r sends every block but r+1 and receives every block but r.
// Allgather: it sends every block but r+2 and receives every block but r+1.
RankVolume allreduce_ring_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (n == 1) return v;
  for (int b = 0; b < n; ++b) {
    if (b != patterns::mod(r + 1, n)) v.send(block_bytes(a, n, b));
    if (b != patterns::mod(r + 2, n)) v.send(block_bytes(a, n, b));
    if (b != r) v.recv(block_bytes(a, n, b));
    if (b != patterns::mod(r + 1, n)) v.recv(block_bytes(a, n, b));
  }
  return v;
}

// One whole vector to and from each of the N-1 others.
RankVolume allreduce_direct_theory(int, int n, const CollArgs& a) {
  RankVolume v;
  for (int p = 1; p < n; ++p) {
    v.send(a.bytes());
    v.recv(a.bytes());
  }
  return v;
}

RankVolume allreduce_tree_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  detail::add_tree_job_volume(v, patterns::btree_node(n, r), a.count, a);
  return v;
}

RankVolume allreduce_dbt_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  for (int t = 0; t < 2; ++t)
    detail::add_tree_job_volume(v, patterns::dbt_node(n, r, t),
                                patterns::block_of(a.count, 2, t).count, a);
  return v;
}

RankVolume allreduce_halving_doubling_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (n == 1) return v;
  const patterns::HdLayout l = patterns::hd_layout(n, r);
  if (l.role != patterns::FoldRole::none) {  // the whole vector each way with the partner
    v.send(a.bytes());
    v.recv(a.bytes());
  }
  if (l.vrank < 0) return v;
  auto range_bytes = [&](int first, int len) {
    return patterns::block_range(a.count, l.pof2, first, len).count * a.elem_size();
  };
  for (const auto& steps : {patterns::hd_reduce_scatter_steps(n, l.vrank),
                            patterns::hd_allgather_steps(n, l.vrank)})
    for (const patterns::HdStep& s : steps) {
      v.send(range_bytes(s.send_first, s.send_len));
      v.recv(range_bytes(s.recv_first, s.recv_len));
    }
  return v;
}

}  // namespace collscope
