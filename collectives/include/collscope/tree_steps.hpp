// The whole vector down or up a fixed tree (patterns/static_tree.hpp), as schedule
// steps: what Open MPI's generic broadcast and reduce do with one segment, shared by the
// broadcasts and reductions on its trees and by allreduce_nonoverlapping.
//
// Rounds: a rank at depth d of a tree of height H receives from its parent in round
// first + d - 1 and sends to all its children at once in round first + d (broadcast);
// it receives from all its children at once in round first + H - d - 1 and sends to its
// parent in round first + H - d (reduce). Both take H rounds.
//
// Scratch and tags are the caller's to declare (before its first step), so that these
// steps can follow others in one schedule.
#pragma once

#include "collscope/patterns/static_tree.hpp"
#include "collscope/schedule.hpp"

namespace collscope::detail {

// `bytes` from `from` on the tree's root to `into` on every rank (the root copies when
// the two differ).
Steps tree_broadcast_steps(Plan& p, const patterns::StaticTree& tree, BufRef from, BufRef into,
                           std::size_t bytes, std::uint32_t tag, int first_round);

// Each rank's `input` reduced with its subtree's into `acc` (the root ends with the
// result; elsewhere acc may be scratch), its children's vectors arriving in `inbox`
// (children x bytes, declared by the caller: reduce_inbox_bytes). A leaf sends its input
// as it is.
Steps tree_reduce_steps(Plan& p, const patterns::StaticTree& tree, BufRef input, BufRef acc,
                        BufRef inbox, std::size_t bytes, std::uint32_t tag, int first_round);
std::size_t reduce_inbox_bytes(const patterns::StaticTree& tree, int rank, std::size_t bytes);

}  // namespace collscope::detail
