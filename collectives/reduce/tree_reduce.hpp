// The reduce on one of Open MPI's fixed trees (patterns/static_tree.hpp), unsegmented as
// its fixed decision runs it: each rank's vector plus its subtree's, up the tree to the
// root (tree_steps.hpp). Shared by reduce_linear, reduce_chain and reduce_binary_tree.
#pragma once

#include "collscope/schedule.hpp"
#include "collscope/tree_steps.hpp"

namespace collscope::detail {

// Scratch: its children's vectors on a rank with children, and the partial sum on one
// that is not the root (the root sums into its receive buffer).
inline Steps reduce_on_tree(Plan& p, patterns::StaticTree tree) {
  const std::size_t bytes = p.count() * p.elem();
  const int v = tree.to_virtual(p.rank());
  const std::size_t inbox_bytes = reduce_inbox_bytes(tree, p.rank(), bytes);
  const std::uint32_t tag = p.tag();
  const BufRef inbox = inbox_bytes > 0 ? p.scratch(inbox_bytes) : BufRef{};
  const BufRef acc = v == 0 ? Plan::recv() : inbox_bytes > 0 ? p.scratch(bytes) : Plan::send();
  auto steps = tree_reduce_steps(p, tree, Plan::send(), acc, inbox, bytes, tag, 0);
  while (steps.next()) co_yield steps.value();
}

}  // namespace collscope::detail
