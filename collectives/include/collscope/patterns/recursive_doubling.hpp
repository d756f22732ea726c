// Recursive halving (reduce-scatter) and recursive doubling (allgather) over N blocks
// for any N, using the fold of halving_doubling.hpp, as pure functions.
//
// p = largest power of two <= N, rem = N - p. Ranks 0..2*rem-1 pair up (2v, 2v+1); the
// odd one takes virtual rank v and stands for both, the even one sits the steps out.
// The other ranks take virtual rank r - rem. Virtual block v is the set of real blocks
// of the ranks virtual rank v stands for:
//
//   v < rem:  real blocks 2v and 2v+1        v >= rem:  real block v + rem
//
// which are adjacent, so any range of virtual blocks is one contiguous element range.
//   N = 6, p = 4, rem = 2:   virtual block  0     1     2   3
//                            real blocks    0,1   2,3   4   5
// The steps (peer, virtual block ranges) are hd_reduce_scatter_steps and
// hd_allgather_steps of halving_doubling.hpp; folded_range turns their ranges into
// element ranges of the N-block partition.
#pragma once

#include <cstddef>

#include "collscope/patterns/block.hpp"
#include "collscope/patterns/halving_doubling.hpp"

namespace collscope::patterns {

// First real block of virtual block v (v == p gives N, the end).
inline int folded_first_block(int nranks, int vblock) {
  const int rem = nranks - largest_pof2_at_most(nranks);
  return vblock < rem ? 2 * vblock : vblock + rem;
}

// Elements of virtual blocks [first, first + len) in the N-block partition of count.
inline Block folded_range(std::size_t count, int nranks, int first, int len) {
  const int lo = folded_first_block(nranks, first);
  const int hi = folded_first_block(nranks, first + len);
  return block_range(count, nranks, lo, hi - lo);
}

// What the virtual blocks of the halving and the doubling are, in the schedules that
// share those steps: the vector cut in p blocks (an allreduce or a reduce, whose
// result is the whole vector: any cut will do), or in the N-block partition as above (a
// reduce-scatter or an allgather, whose blocks are the ranks').
enum class HdBlocks { pof2, folded };

// Elements of virtual blocks [first, first + len) of the vector's cut `blocks`.
inline Block hd_range(std::size_t count, int nranks, HdBlocks blocks, int first, int len) {
  if (blocks == HdBlocks::pof2) return block_range(count, largest_pof2_at_most(nranks), first, len);
  return folded_range(count, nranks, first, len);
}

}  // namespace collscope::patterns
