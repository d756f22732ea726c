// The ring reduce-scatter's steps, shared by reduce_scatter_ring and by the allreduce
// that starts with a ring reduce-scatter (allreduce/ring.cpp).
#pragma once

#include <cstdint>

#include "collscope/schedule.hpp"

namespace collscope::detail {

// Where the ring reduce-scatter keeps its partial sums (the caller declares the scratch).
struct RingSums {
  BufRef inbox[2];  // step k receives r-1's partial sum into inbox[k % 2]
  // true: the sum of block b lands at b's place in the receive buffer and goes on from
  // there (the allreduce, whose receive buffer holds the vector: one inbox, given twice,
  // will do). false: the sum stays in the inbox it arrived in and goes on from there, so
  // two inboxes take turns, and the last one, block `owned`, lands at the start of the
  // receive buffer (the reduce-scatter's, which holds that block only).
  bool in_recv;
};

struct RingReduceScatter {
  int owned;  // the block this rank ends with: r (MPI's), r+1 (the allreduce's ring)
  RingSums sums;
  std::uint32_t tag;
  const char* phase;
  int first_step = 0;
  // Over part `part` of `parts` of every block (patterns::block_part): the segmented
  // ring's phases. The whole blocks by default.
  std::size_t part = 0, parts = 1;
};

// N-1 steps (N >= 2), numbered first_step.., after which this rank holds block `owned`
// (its part) fully reduced: step k sends the partial sum of block owned-k-1 to r+1 (its
// untouched input in the first step) and receives that of block owned-k-2 from r-1,
// adding its own input to it.
Steps ring_reduce_scatter_steps(Plan& p, RingReduceScatter rs);

}  // namespace collscope::detail
