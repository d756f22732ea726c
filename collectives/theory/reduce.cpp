// Closed-form volume of the reduce algorithms, per peer (theory.hpp).
#include "collscope/theory.hpp"
#include "common.hpp"
#include "rooted.hpp"

namespace collscope::theory {
namespace {

// The vector up each tree edge, in `msgs` messages: once from every child, once to the
// parent.
void binomial_up(int r, int n, const CollArgs& a, std::span<RankVolume> pp, std::uint64_t msgs) {
  if (a.bytes() == 0) return;
  const detail::Binomial tree{n, a.root};
  const int v = tree.virtual_of(r);
  for (int c : tree.children(v)) {
    RankVolume& from = pp[static_cast<std::size_t>(tree.real_of(c))];
    from.recv_bytes += a.bytes();
    from.recv_msgs += msgs;
  }
  if (v != 0) {
    RankVolume& to = pp[static_cast<std::size_t>(tree.real_of(tree.parent(v)))];
    to.sent_bytes += a.bytes();
    to.sent_msgs += msgs;
  }
}

}  // namespace

void reduce_binomial(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  binomial_up(r, n, a, pp, 1);
}

void reduce_pipelined(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  binomial_up(r, n, a, pp, detail::segments_of(a, a.count));
}

}  // namespace collscope::theory
