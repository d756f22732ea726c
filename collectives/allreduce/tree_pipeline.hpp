// The engine shared by the tree and double-binary-tree allreduce: reduce a part of the
// vector up a tree to its root, then broadcast it back down, in segments so the levels
// of the tree work at the same time (a pipeline). Several trees (jobs) run interleaved.
#pragma once

#include <span>

#include "collscope/comm.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/patterns/tree.hpp"
#include "collscope/volume.hpp"

namespace collscope::detail {

struct TreeJob {
  patterns::TreeNode node;  // this rank's place in the tree
  patterns::Block part;     // the elements this tree carries
  std::uint32_t tag;        // tag (reduce) and tag + 1 (broadcast)
};

// Elements per pipeline segment: segment_bytes rounded down to whole elements, >= 1.
std::size_t segment_elems(const CollArgs& a);
std::size_t num_segments(std::size_t elems, std::size_t seg_elems);

void tree_reduce_broadcast(Comm& comm, const CollArgs& a, std::span<const TreeJob> jobs);

// Exact volume of one rank in such a job (theory side).
void add_tree_job_volume(RankVolume& v, const patterns::TreeNode& node,
                         std::size_t part_elems, const CollArgs& a);

}  // namespace collscope::detail
