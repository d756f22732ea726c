// The recursive halving's steps, shared by reduce_scatter_halving and by the schedules
// that start with it: the halving-doubling allreduce (allreduce/halving_doubling.cpp)
// and Rabenseifner's reduce (reduce/rabenseifner.cpp); and the steps of a rank that the
// fold before it sets aside, shared with the recursive-doubling allreduce.
#pragma once

#include <cstdint>

#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/schedule.hpp"

namespace collscope::detail {

// What the halving reads and writes; the caller declares the scratch and the tag.
struct Halving {
  int vrank;                  // this rank's virtual rank (patterns/halving_doubling.hpp)
  patterns::HdBlocks blocks;  // what a virtual block is
  BufRef input;     // this rank's vector until the first reduction (or the fold's sum)
  BufRef sums;      // the partial sums, each at its range's offset; sent on from step 2
  BufRef incoming;  // the partner's half: scratch of the first step's half, at least
  std::uint32_t tag;
  int shift = 0;    // the peer of fold rank f is real rank (f + shift) mod N
};

// Steps 1..log2 p: at distance d = p/2, ..., 1 virtual rank v sends the half of its
// range on v^d's side, receives its own half and adds it to its own part, into `sums`;
// after the last step `sums` holds virtual block v with every contribution.
Steps halving_steps(Plan& p, Halving h);

// The tags of the fold's two messages: the whole vector in (step 0), the result out.
struct FoldTags {
  std::uint32_t in, out;
};

// A rank the fold sets aside (patterns::FoldRole::sender) in a schedule that folds whole
// vectors: step 0 hands its input to `partner`; step `unfold_step` takes `result_bytes`
// of the result back into its receive buffer.
Steps set_aside_steps(Plan& p, int partner, FoldTags tags, std::size_t result_bytes, int unfold_step);

}  // namespace collscope::detail
