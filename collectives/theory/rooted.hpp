// The binomial tree of the rooted collectives (MPICH's; Open MPI's reduce "binomial"),
// restated for the closed forms: ranks are renumbered v = (r - root) mod N so that the
// root is 0; v's parent is v minus its lowest set bit; its children are v + m for every
// power of two m below that bit (below N's next power of two at the root) with v + m <
// N; its subtree is the run of virtual ranks [v, v + size).
#pragma once

#include <array>
#include <vector>

#include "common.hpp"

namespace collscope::theory::detail {

struct Binomial {
  int n, root;
  int virtual_of(int r) const { return wrap(r - root, n); }
  int real_of(int v) const { return (v + root) % n; }
  int parent(int v) const { return v == 0 ? -1 : v - lowest_bit(v); }
  int limit(int v) const { return v == 0 ? pow2_at_least(n) : lowest_bit(v); }
  std::vector<int> children(int v) const {
    std::vector<int> out;
    for (int m = 1; m < limit(v); m *= 2)
      if (v + m < n) out.push_back(v + m);
    return out;
  }
  int subtree_size(int v) const { return std::min(limit(v), n - v); }
  // The bytes of the blocks of virtual ranks [first, first + len), split where the run
  // of real ranks wraps past N-1: {first piece, second piece (0 unless it wraps)}.
  std::array<std::uint64_t, 2> run_pieces(const CollArgs& a, int first, int len) const {
    if (len <= 0) return {0, 0};
    const int start = real_of(first), head = std::min(len, n - start);
    return {blocks_bytes(a, n, start, head), blocks_bytes(a, n, 0, len - head)};
  }
  std::uint64_t run_bytes(const CollArgs& a, int first, int len) const {
    const auto p = run_pieces(a, first, len);
    return p[0] + p[1];
  }
};

}  // namespace collscope::theory::detail
