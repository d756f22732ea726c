// Split-binary-tree broadcast (Open MPI's coll_tuned bcast algorithm 4,
// "split_binary_tree", ompi_coll_base_bcast_intra_split_bintree): the root cuts the
// vector in two halves and sends the first down the left side of Open MPI's binary tree
// (patterns/static_tree.hpp: odd virtual ranks), the second down the right side (even
// ones), each in segments; then every rank swaps its half with a neighbour of the other
// side, so that both halves reach everyone with each rank sending about D.
//
//   N = 7, root 0; half A = the first ceil(count/2) elements, B the rest:
//                  0                   tree:  0 -A-> 1, 0 -B-> 2
//              1(A)    2(B)                   1 -A-> 3, 5;  2 -B-> 4, 6
//            3(A) 5(A) 4(B) 6(B)       swap:  1<->2, 3<->4, 5<->6 (A for B)
//   N even: the last rank (odd: side A) has no partner and gets B from the root instead.
//
// Rounds: segment c of a half leaves the root in round c; a rank at depth d receives it
// in round c + d - 1 and forwards it to its children in round c + d; the swap follows
// the last segment. Segments: --segment bytes in whole elements, at least one, as Open
// MPI takes its segment size (its fixed decision passes none: one segment per half).
// Two deviations from Open MPI, both at the edges: when a half is empty (count <= 1) it
// broadcasts down the chain, and so does this schedule; when its segment size is set and
// larger than a half, it also takes the chain, where this schedule sends each half in one
// segment.
//
// Per rank: its half from its parent and to each child (in ceil(half / segment)
// messages each), then its half out and the other half in, whole. Inner ranks send up
// to 2.5 D, leaves D/2. Limits: none (any N, count, root). No scratch.
#include <algorithm>

#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/static_tree.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

using patterns::Block;

int side_of(int vrank) { return vrank % 2 == 1 ? 0 : 1; }  // 0: the first half (left)

}  // namespace

Steps broadcast_split_binary_tree(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const std::size_t count = p.count();
  const Block half[2] = {{0, count - count / 2}, {count - count / 2, count / 2}};
  if (n > 1 && (half[0].count == 0 || half[1].count == 0)) {  // Open MPI's fallback
    auto chain = broadcast_chain(p);
    while (chain.next()) co_yield chain.value();
    co_return;
  }
  StepBuilder s(p);
  if (n == 1) {
    co_yield s.copy(Plan::recv(), Plan::send(), count * p.elem()).step("copy", 0);
    co_return;
  }
  const patterns::StaticTree tree{patterns::TreeShape::kary, n, root, 2};
  const int v = tree.to_virtual(p.rank()), depth = tree.depth(v);
  const std::vector<int> children = tree.children(v);
  const std::size_t seg = patterns::segment_elems(p.args().segment_bytes, p.elem());
  const long segments[2] = {static_cast<long>(patterns::num_segments(half[0].count, seg)),
                            static_cast<long>(patterns::num_segments(half[1].count, seg))};
  auto segment = [&](int side, long c) {
    const Block b = patterns::segment_of(half[side].count, seg, static_cast<std::size_t>(c));
    return Block{half[side].offset + b.offset, b.count};
  };
  const std::uint32_t tree_tag = p.tag(), swap_tag = p.tag();
  const int swap_round = static_cast<int>(std::max(segments[0], segments[1])) + tree.height() - 1;
  if (v == 0) s.copy(Plan::recv(), Plan::send(), count * p.elem());
  for (int t = 0; t < swap_round; ++t) {
    const long in = t - (depth - 1), out = t - depth;  // the segments received and sent
    if (v != 0 && in >= 0 && in < segments[side_of(v)]) {
      const Block b = segment(side_of(v), in);
      s.recv(tree.to_real(tree.parent(v)), p.recv_at(b), p.bytes(b), tree_tag);
    }
    for (int c : children) {
      const int side = v == 0 ? side_of(c) : side_of(v);
      if (out < 0 || out >= segments[side]) continue;
      const Block b = segment(side, out);
      s.send(tree.to_real(c), v == 0 ? p.send_at(b) : p.recv_at(b), p.bytes(b), tree_tag);
    }
    co_yield s.step("tree", t);
  }
  if (n % 2 == 0 && v == 0) {  // the root's second half to the last rank
    s.send(tree.to_real(n - 1), p.send_at(half[1]), p.bytes(half[1]), swap_tag);
  } else if (n % 2 == 0 && v == n - 1) {
    s.recv(tree.to_real(0), p.recv_at(half[1]), p.bytes(half[1]), swap_tag);
  } else if (v != 0) {
    const int mine = side_of(v), pair = tree.to_real(mine == 0 ? v + 1 : v - 1);
    s.recv(pair, p.recv_at(half[1 - mine]), p.bytes(half[1 - mine]), swap_tag);
    s.send(pair, p.recv_at(half[mine]), p.bytes(half[mine]), swap_tag);
  }
  co_yield s.step("swap", swap_round);
}

}  // namespace collscope::schedules
