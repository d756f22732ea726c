// The pipelined tree allreduce shared by `tree` and `dbt`: each job reduces a part of
// the vector up a tree to its root and broadcasts it back down, in segments, with the
// way up and the way down running at once (as NCCL's tree does).
//
// Steps are rounds shared by every rank. With D the tree's depth and d a rank's depth
// (root 0), segment c moves
//   up:   a rank at depth d receives it from its children in step c + D - d - 1, adds
//         it to its own (overlapping the next step's receives) and sends the sum to
//         its parent in step c + D - d;
//   down: a rank at depth d receives it from its parent in step c + D + d - 1 and
//         sends it to its children in step c + D + d (the root: step c + D, right
//         after its last addition).
// Every child of a rank is one level deeper, so all its children's segment c arrive in
// one step; two inboxes per child (segment parity) let segment c+1 arrive while c is
// reduced. The sums are made in place in the receive buffer, which the way down then
// overwrites with the final values.
#pragma once

#include <span>

#include "collscope/patterns/tree.hpp"
#include "collscope/schedule.hpp"

namespace collscope::detail {

struct TreeJob {
  patterns::TreeNode node;  // this rank's place in the tree
  int depth = 0;            // this rank's depth (root 0)
  int tree_depth = 0;       // the deepest rank's depth
  patterns::Block part;     // the elements this tree carries
};

Steps pipelined_tree_allreduce(Plan& p, std::span<const TreeJob> jobs);

}  // namespace collscope::detail
