#include "collscope/tree_steps.hpp"

namespace collscope::detail {

Steps tree_broadcast_steps(Plan& p, const patterns::StaticTree& tree, BufRef from, BufRef into,
                           std::size_t bytes, std::uint32_t tag, int first_round) {
  const int v = tree.to_virtual(p.rank()), depth = tree.depth(v);
  StepBuilder s(p);
  BufRef have = into;
  if (v == 0) {
    s.copy(into, from, bytes);
    have = from;  // the root sends straight from where its vector is
  } else {
    s.recv(tree.to_real(tree.parent(v)), into, bytes, tag);
    co_yield s.step("broadcast: receive", first_round + depth - 1);
  }
  for (int c : tree.children(v)) s.send(tree.to_real(c), have, bytes, tag);
  co_yield s.step("broadcast: send", first_round + depth);
}

std::size_t reduce_inbox_bytes(const patterns::StaticTree& tree, int rank, std::size_t bytes) {
  return tree.children(tree.to_virtual(rank)).size() * bytes;
}

Steps tree_reduce_steps(Plan& p, const patterns::StaticTree& tree, BufRef input, BufRef acc,
                        BufRef inbox, std::size_t bytes, std::uint32_t tag, int first_round) {
  const int v = tree.to_virtual(p.rank()), depth = tree.depth(v), height = tree.height();
  const std::vector<int> children = tree.children(v);
  StepBuilder s(p);
  BufRef sum = input;  // a leaf sends its input as it is
  if (!children.empty()) {
    for (std::size_t i = 0; i < children.size(); ++i)
      s.recv(tree.to_real(children[i]), inbox.plus(i * bytes), bytes, tag);
    for (std::size_t i = 0; i < children.size(); ++i)
      s.reduce(acc, i == 0 ? input : acc, inbox.plus(i * bytes), bytes);
    co_yield s.step("reduce: receive", first_round + height - depth - 1);
    sum = acc;
  } else if (v == 0) {
    co_yield s.copy(acc, input, bytes).step("reduce: copy", first_round);  // N = 1
  }
  if (v != 0) co_yield s.send(tree.to_real(tree.parent(v)), sum, bytes, tag).step("reduce: send", first_round + height - depth);
}

}  // namespace collscope::detail
