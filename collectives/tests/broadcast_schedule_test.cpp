// The rooted schedules (patterns/binomial.hpp): the binomial tree at every root, the
// chain, pipeline segments; and the broadcast theory against closed forms.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "collscope/theory.hpp"
#include "collscope/patterns/binomial.hpp"
#include "test_args.hpp"

namespace collscope::patterns {
namespace {

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

TEST(Binomial, VirtualRanksAreARotation) {
  for (int n = 1; n <= 9; ++n)
    for (int root = 0; root < n; ++root) {
      EXPECT_EQ(to_virtual(root, root, n), 0);
      for (int r = 0; r < n; ++r) EXPECT_EQ(to_real(to_virtual(r, root, n), root, n), r);
    }
}

TEST(Binomial, EveryRankIsReachedOnceAndChildrensParentIsMe) {
  for (int n = 1; n <= 33; ++n) {
    std::multiset<int> reached{0};
    for (int v = 0; v < n; ++v)
      for (int c : binomial_children(n, v)) {
        EXPECT_EQ(binomial_parent(n, c), v) << n << " " << c;
        EXPECT_GT(c, v);
        reached.insert(c);
      }
    EXPECT_EQ(binomial_parent(n, 0), -1);
    EXPECT_EQ(reached.size(), static_cast<std::size_t>(n));
    for (int v = 0; v < n; ++v) EXPECT_EQ(reached.count(v), 1u) << n << " " << v;
    EXPECT_EQ(binomial_children(n, 0).size(), static_cast<std::size_t>(ceil_log2(n)));
  }
}

// Farthest child (largest power of two) first: its subtree has the most rounds ahead.
TEST(Binomial, ChildrenComeFarthestFirst) {
  EXPECT_EQ(binomial_children(6, 0), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(binomial_children(6, 4), (std::vector<int>{5}));
  EXPECT_EQ(binomial_children(8, 4), (std::vector<int>{6, 5}));
  EXPECT_TRUE(binomial_children(6, 5).empty());
  for (int n = 1; n <= 33; ++n)
    for (int v = 0; v < n; ++v) {
      const std::vector<int> kids = binomial_children(n, v);
      for (std::size_t i = 1; i < kids.size(); ++i) EXPECT_GT(kids[i - 1], kids[i]);
      for (int c : kids)  // a power of two away, within the subtree's nominal size
        EXPECT_EQ((c - v) & (c - v - 1), 0) << n << " " << v << " " << c;
    }
}

// A subtree is the rank followed by its children's subtrees, back to back.
TEST(Binomial, SubtreeIsMeThenMyChildrensSubtreesInOrder) {
  for (int n = 1; n <= 33; ++n) {
    EXPECT_EQ(binomial_subtree(n, 0).len, n);
    for (int v = 0; v < n; ++v) {
      const RankRun sub = binomial_subtree(n, v);
      EXPECT_EQ(sub.first, v);
      std::vector<int> kids = binomial_children(n, v);
      int next = v + 1;
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) {  // nearest child first
        EXPECT_EQ(binomial_subtree(n, *it).first, next);
        next += binomial_subtree(n, *it).len;
      }
      EXPECT_EQ(next, v + sub.len) << n << " " << v;
    }
  }
}

// ceil(log2 N) rounds; a rank is as deep as its virtual rank has set bits.
TEST(Binomial, DepthIsAtMostCeilLog2) {
  for (int n = 1; n <= 33; ++n) {
    int depth = 0;
    for (int v = 0; v < n; ++v) {
      int d = 0;
      for (int p = v; p > 0; p = binomial_parent(n, p)) ++d;
      EXPECT_EQ(d, __builtin_popcount(static_cast<unsigned>(v)));
      depth = std::max(depth, d);
    }
    EXPECT_LE(depth, ceil_log2(n)) << n;
    if ((n & (n - 1)) == 0) {
      EXPECT_EQ(depth, ceil_log2(n)) << n;
    }
  }
}

TEST(Chain, VisitsEveryRankOnceFromTheRoot) {
  for (int n = 1; n <= 9; ++n)
    for (int root = 0; root < n; ++root) {
      EXPECT_EQ(chain_prev(root, root, n), -1);
      std::set<int> seen;
      int r = root, steps = 0;
      for (; r >= 0; r = chain_next(r, root, n), ++steps) {
        EXPECT_TRUE(seen.insert(r).second);
        const int next = chain_next(r, root, n);
        if (next >= 0) {
          EXPECT_EQ(chain_prev(next, root, n), r);
          EXPECT_EQ(next, mod(r + 1, n));
        }
      }
      EXPECT_EQ(steps, n);
    }
}

TEST(Segments, RoundDownToWholeElementsAndCoverTheVector) {
  EXPECT_EQ(segment_elems(8, 4), 2u);
  EXPECT_EQ(segment_elems(7, 4), 1u);
  EXPECT_EQ(segment_elems(3, 8), 1u);  // at least one element
  for (std::size_t seg : {1u, 2u, 3u, 7u})
    for (std::size_t count = 0; count <= 30; ++count) {
      std::size_t next = 0;
      for (std::size_t c = 0; c < num_segments(count, seg); ++c) {
        const Block b = segment_of(count, seg, c);
        EXPECT_EQ(b.offset, next);
        EXPECT_GT(b.count, 0u);
        EXPECT_LE(b.count, seg);
        next += b.count;
      }
      EXPECT_EQ(next, count);
    }
}

}  // namespace
}  // namespace collscope::patterns

namespace collscope {
namespace {

using test::rooted_args;

TEST(BroadcastTheory, BinomialRootSendsCeilLog2Vectors) {
  const CollArgs a = rooted_args(1000, 2);
  const RankVolume root = theory_total(theory::broadcast_binomial, 2, 6, a);
  EXPECT_EQ(root.sent_bytes, 3 * a.bytes());  // children 4, 2, 1 (virtual)
  EXPECT_EQ(root.recv_bytes, 0u);
  const RankVolume leaf = theory_total(theory::broadcast_binomial, 3, 6, a);  // virtual 1: a leaf
  EXPECT_EQ(leaf.sent_msgs, 0u);
  EXPECT_EQ(leaf.recv_bytes, a.bytes());
}

TEST(BroadcastTheory, ChainSendsOneMessagePerSegment) {
  const CollArgs a = rooted_args(1001, 1, 400);  // 100 floats a segment: 11 segments
  EXPECT_EQ(theory_total(theory::broadcast_chain, 1, 4, a).sent_msgs, 11u);
  EXPECT_EQ(theory_total(theory::broadcast_chain, 1, 4, a).recv_msgs, 0u);
  EXPECT_EQ(theory_total(theory::broadcast_chain, 0, 4, a).sent_msgs, 0u);  // the last rank of 1,2,3,0
  EXPECT_EQ(theory_total(theory::broadcast_chain, 0, 4, a).recv_bytes, a.bytes());
  EXPECT_EQ(theory_total(theory::broadcast_chain, 2, 4, a).sent_bytes, a.bytes());
}

// Even blocks: the root sends its N-1 other blocks down the tree and N-1 on the ring;
// every other rank receives its subtree's blocks, then the N-1 blocks but its own.
TEST(BroadcastTheory, ScatterAllgatherMovesAboutTwiceTheVector) {
  for (int n = 2; n <= 9; ++n)
    for (int root = 0; root < n; ++root) {
      const std::uint64_t block = 100 * 4;
      const CollArgs a = rooted_args(100 * static_cast<std::size_t>(n), root);
      const std::uint64_t others = static_cast<std::uint64_t>(n - 1) * block;
      EXPECT_EQ(theory_total(theory::broadcast_scatter_allgather, root, n, a).sent_bytes, 2 * others);
      for (int r = 0; r < n; ++r) {
        if (r == root) continue;
        const int v = patterns::to_virtual(r, root, n);
        const auto len = static_cast<std::uint64_t>(patterns::binomial_subtree(n, v).len);
        EXPECT_EQ(theory_total(theory::broadcast_scatter_allgather, r, n, a).recv_bytes, len * block + others);
      }
    }
}

// Root 1 of 4: the subtree of virtual 2 is real {3, 0}, two pieces, two messages.
TEST(BroadcastTheory, ScatterAllgatherSendsAWrappedSubtreeInTwoPieces) {
  const CollArgs a = rooted_args(400, 1);
  const RankVolume v = theory_total(theory::broadcast_scatter_allgather, 3, 4, a);  // virtual 2
  EXPECT_EQ(v.recv_msgs, 2u + 3u);                               // 2 pieces + the ring
  EXPECT_EQ(v.recv_bytes, 2 * 400u + 3 * 400u);
}

}  // namespace
}  // namespace collscope
