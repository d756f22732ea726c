// Exact volume of each gather algorithm: bytes and messages one rank sends and receives
// in one call, for any N, count, root, uneven blocks included. A zero-byte message is
// never sent or counted.
#include "collscope/gather.hpp"
#include "collscope/patterns/binomial.hpp"

namespace collscope {
namespace {

std::uint64_t block_bytes(const CollArgs& a, int n, int rank) {
  return patterns::block_of(a.count, n, rank).count * a.elem_size();
}

std::uint64_t subtree_bytes(const CollArgs& a, int n, int vrank) {
  return patterns::virtual_run_elems(a.count, n, a.root, patterns::binomial_subtree(n, vrank)) *
         a.elem_size();
}

}  // namespace

// Every other rank's block to the root, one message each.
RankVolume gather_linear_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (r != a.root) {
    v.send(block_bytes(a, n, r));
    return v;
  }
  for (int p = 0; p < n; ++p)
    if (p != a.root) v.recv(block_bytes(a, n, p));
  return v;
}

// One message per tree edge, carrying the child's whole subtree.
RankVolume gather_binomial_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  const int vr = patterns::to_virtual(r, a.root, n);
  for (int c : patterns::binomial_children(n, vr)) v.recv(subtree_bytes(a, n, c));
  if (vr != 0) v.send(subtree_bytes(a, n, vr));
  return v;
}

}  // namespace collscope
