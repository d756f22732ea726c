// Schedules of the rooted collectives, as pure functions: the binomial tree rooted at
// any rank, the pipeline chain, and pipeline segments. No I/O.
//
// Binomial tree (MPICH's; Open MPI's in-order binomial tree, its reduce's "binomial"; its
// broadcast's is static_tree.hpp's strided one). Ranks are renumbered so that the root is
// virtual rank 0: v = (r - root) mod N. Virtual rank v's parent is v with its lowest set
// bit cleared; its children are v + m for every power of two m below that bit (every
// m < N at the root) with v + m < N, farthest (largest m, the most rounds ahead) first.
// The subtree of v is the run of consecutive virtual ranks [v, v + size). N = 6:
//
//   virtual tree           rounds (farthest child first)
//   0 -+- 4 - 5            round 0: 0 -> 4
//      +- 2 - 3            round 1: 0 -> 2, 4 -> 5
//      +- 1                round 2: 0 -> 1, 2 -> 3
//
// Blocks are indexed by real rank. With root != 0 the real ranks of a subtree (and so
// its blocks) can wrap past N-1 to 0: real_runs() splits a virtual run into at most two
// runs of consecutive real ranks. Root 3 of 6: the subtree of v 2 = {2, 3} is real
// {5} + {0}; the subtree of v 4 = {4, 5} is real {1, 2}; the root's whole tree is real
// {3, 4, 5} + {0, 1, 2}.
//
// Chain: root -> root+1 -> ... -> root-1 (mod N); position p = virtual rank.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "collscope/patterns/block.hpp"

namespace collscope::patterns {

// Ranks [first, first + len); real ranks or virtual ones, as the caller says.
struct RankRun {
  int first = 0;
  int len = 0;
};

inline int to_virtual(int rank, int root, int nranks) { return mod(rank - root, nranks); }
inline int to_real(int vrank, int root, int nranks) { return mod(vrank + root, nranks); }

// Binomial tree over virtual ranks.
int binomial_parent(int nranks, int vrank);                  // -1 at the root
std::vector<int> binomial_children(int nranks, int vrank);   // farthest first
RankRun binomial_subtree(int nranks, int vrank);             // virtual ranks

// The real ranks of a run of virtual ranks: runs[0], then runs[1] (len 0 unless the run
// wraps past real rank N-1).
std::array<RankRun, 2> real_runs(int nranks, int root, RankRun virt);

// Elements in the blocks of a run of real ranks, and where they start.
inline Block run_block(std::size_t count, int nranks, RankRun real) {
  return block_range(count, nranks, real.first, real.len);
}
// Elements in the blocks of a run of virtual ranks (wrapped or not).
std::size_t virtual_run_elems(std::size_t count, int nranks, int root, RankRun virt);
inline bool run_wraps(int nranks, int root, RankRun virt) {
  return real_runs(nranks, root, virt)[1].len > 0;
}
// Elements a rank of the binomial gather or scatter stages in scratch: its subtree's
// blocks on inner non-root ranks, the one wrapping child subtree's blocks at the root.
std::size_t binomial_staging_elems(std::size_t count, int nranks, int root, int vrank);

// Chain: the next and previous rank, -1 past the ends.
inline int chain_next(int rank, int root, int nranks) {
  const int v = to_virtual(rank, root, nranks);
  return v + 1 < nranks ? to_real(v + 1, root, nranks) : -1;
}
inline int chain_prev(int rank, int root, int nranks) {
  const int v = to_virtual(rank, root, nranks);
  return v > 0 ? to_real(v - 1, root, nranks) : -1;
}

// Pipeline segments: segment_bytes rounded down to whole elements, at least one.
inline std::size_t segment_elems(std::size_t segment_bytes, std::size_t elem) {
  return std::max<std::size_t>(1, segment_bytes / elem);
}
inline std::size_t num_segments(std::size_t count, std::size_t seg_elems) {
  return (count + seg_elems - 1) / seg_elems;
}
inline Block segment_of(std::size_t count, std::size_t seg_elems, std::size_t c) {
  const std::size_t first = c * seg_elems;
  return {first, std::min(seg_elems, count - first)};
}

}  // namespace collscope::patterns
