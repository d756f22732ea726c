// The pure schedules, checked without any communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "collscope/patterns/block.hpp"
#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/ring_own_block.hpp"
#include "collscope/patterns/static_tree.hpp"
#include "collscope/patterns/tournament.hpp"
#include "collscope/patterns/tree.hpp"

namespace collscope::patterns {
namespace {

// Every two ranks meet in exactly one round, a round's pairs touch each rank at most once,
// and there are N-1 rounds (N even) or N (N odd: one rank rests in each).
TEST(Tournament, EveryPairOnceAndEachRoundDisjoint) {
  for (int n = 2; n <= 17; ++n) {
    const auto rounds = tournament_rounds(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << "N " << n;
    std::set<std::pair<int, int>> met;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const RankPair& p : round) {
        EXPECT_TRUE(0 <= p.a && p.a < p.b && p.b < n) << "N " << n;
        EXPECT_TRUE(busy.insert(p.a).second && busy.insert(p.b).second) << "N " << n;
        EXPECT_TRUE(met.insert({p.a, p.b}).second) << "N " << n << ": " << p.a << "," << p.b << " twice";
      }
    }
    EXPECT_EQ(met.size(), static_cast<std::size_t>(n * (n - 1) / 2)) << "N " << n;
  }
}

TEST(Block, CoversTheBufferExactlyOnceWithOpenMpiRule) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count = 0; count <= 50; ++count) {
      std::size_t next = 0;
      for (int i = 0; i < n; ++i) {
        const Block b = block_of(count, n, i);
        EXPECT_EQ(b.offset, next) << n << " " << count << " " << i;
        EXPECT_EQ(b.count, count / n + (static_cast<std::size_t>(i) < count % n ? 1 : 0));
        next += b.count;
      }
      EXPECT_EQ(next, count);
    }
}

TEST(Block, RangeSpansItsBlocks) {
  const Block r = block_range(10, 4, 1, 2);  // blocks 3,3,2,2 -> blocks 1..2 = [3, 8)
  EXPECT_EQ(r.offset, 3u);
  EXPECT_EQ(r.count, 5u);
  EXPECT_EQ(block_range(10, 4, 2, 0).count, 0u);
}

// The segmented ring's parts: each block cut by the block rule again, in order.
TEST(Block, PartsCutEachBlockByTheSameRule) {
  for (int n = 1; n <= 6; ++n)
    for (std::size_t count = 0; count <= 40; ++count)
      for (std::size_t parts = 1; parts <= 5; ++parts)
        for (int b = 0; b < n; ++b) {
          const Block whole = block_of(count, n, b);
          std::size_t next = whole.offset;
          for (std::size_t i = 0; i < parts; ++i) {
            const Block part = block_part(count, n, b, i, parts);
            EXPECT_EQ(part.offset, next) << n << " " << count << " " << parts << " " << b << " " << i;
            EXPECT_EQ(part.count, whole.count / parts + (i < whole.count % parts ? 1 : 0));
            next += part.count;
          }
          EXPECT_EQ(next, whole.offset + whole.count);
        }
}

// The shared ring halves run the own-block ring (ring_own_block.hpp) for the rank that
// ends (starts) with block r+1: that must be the allreduce's ring, step for step.
TEST(Ring, OwnBlockRingShiftedByOneIsTheAllreducesRing) {
  for (int n = 2; n <= 9; ++n)
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < n - 1; ++k) {
        const int owned = ring_owned_block(r, n);
        EXPECT_EQ(own_ring_rs_send_block(owned, n, k), ring_rs_send_block(r, n, k));
        EXPECT_EQ(own_ring_rs_recv_block(owned, n, k), ring_rs_recv_block(r, n, k));
        EXPECT_EQ(own_ring_ag_send_block(owned, n, k), ring_ag_send_block(r, n, k));
        EXPECT_EQ(own_ring_ag_recv_block(owned, n, k), ring_ag_recv_block(r, n, k));
      }
}

TEST(Ring, StepsMatchNeighboursAndCoverEveryBlock) {
  for (int n = 2; n <= 9; ++n)
    for (int r = 0; r < n; ++r) {
      const int prev = ring_prev(r, n);
      std::set<int> rs_recv, ag_recv;
      for (int k = 0; k < n - 1; ++k) {
        // What I receive at step k is what my left neighbour sends at step k.
        EXPECT_EQ(ring_rs_recv_block(r, n, k), ring_rs_send_block(prev, n, k));
        EXPECT_EQ(ring_ag_recv_block(r, n, k), ring_ag_send_block(prev, n, k));
        rs_recv.insert(ring_rs_recv_block(r, n, k));
        ag_recv.insert(ring_ag_recv_block(r, n, k));
        if (k > 0) {  // I forward what I reduced (received) one step before
          EXPECT_EQ(ring_rs_send_block(r, n, k), ring_rs_recv_block(r, n, k - 1));
          EXPECT_EQ(ring_ag_send_block(r, n, k), ring_ag_recv_block(r, n, k - 1));
        }
      }
      EXPECT_EQ(rs_recv.size(), static_cast<std::size_t>(n - 1));
      EXPECT_EQ(rs_recv.count(r), 0u);  // never my own block
      EXPECT_EQ(ring_rs_recv_block(r, n, n - 2), ring_owned_block(r, n));
      EXPECT_EQ(ring_ag_send_block(r, n, 0), ring_owned_block(r, n));
      EXPECT_EQ(ag_recv.count(ring_owned_block(r, n)), 0u);
      EXPECT_EQ(ag_recv.size(), static_cast<std::size_t>(n - 1));
    }
}

// Every rank reached from the root, parent and child links agree, at most two children.
void expect_consistent_tree(int n, int which) {
  std::vector<TreeNode> nodes;
  for (int r = 0; r < n; ++r) nodes.push_back(dbt_node(n, r, which));
  int roots = 0;
  for (int r = 0; r < n; ++r) {
    const TreeNode& t = nodes[r];
    if (t.parent < 0) {
      ++roots;
      EXPECT_EQ(r, dbt_root(n, which)) << "n=" << n << " tree " << which;
      continue;
    }
    ASSERT_LT(t.parent, n);
    const auto& pc = nodes[t.parent].children;
    EXPECT_TRUE(pc[0] == r || pc[1] == r) << "n=" << n << " rank " << r << " parent " << t.parent;
    for (int c : t.children)
      if (c >= 0) {
        ASSERT_LT(c, n);
        EXPECT_EQ(nodes[c].parent, r);
      }
  }
  EXPECT_EQ(roots, 1);
  std::vector<int> todo{dbt_root(n, which)};
  std::set<int> seen;
  while (!todo.empty()) {
    const int r = todo.back();
    todo.pop_back();
    EXPECT_TRUE(seen.insert(r).second) << "rank " << r << " reached twice";
    for (int c : nodes[r].children)
      if (c >= 0) todo.push_back(c);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(n)) << "n=" << n << " tree " << which;
}

TEST(Tree, BothTreesConsistentForAllSizes) {
  for (int n = 1; n <= 70; ++n) {
    expect_consistent_tree(n, 0);
    expect_consistent_tree(n, 1);
  }
}

TEST(Tree, MatchesNcclBinaryTreeForEight) {
  // 0 - 4 - {2 - {1,3}, 6 - {5,7}}
  EXPECT_EQ(btree_node(8, 0).parent, -1);
  EXPECT_EQ(btree_node(8, 0).num_children(), 1);
  EXPECT_EQ(btree_node(8, 4).parent, 0);
  EXPECT_EQ(btree_node(8, 2).parent, 4);
  EXPECT_EQ(btree_node(8, 6).parent, 4);
  EXPECT_EQ(btree_node(8, 5).parent, 6);
  EXPECT_EQ(btree_node(8, 3).parent, 2);
  EXPECT_EQ(btree_node(8, 6).children, (std::array<int, 2>{5, 7}));
  // A non-power of two: N = 6 gives 0 - 4 - {2 - {1,3}, 5}.
  EXPECT_EQ(btree_node(6, 5).parent, 4);
  EXPECT_EQ(btree_node(6, 4).children, (std::array<int, 2>{2, 5}));
}

TEST(Tree, SecondTreeShiftsForOddAndMirrorsForEven) {
  for (int n = 2; n <= 40; ++n)
    for (int r = 0; r < n; ++r) {
      const TreeNode t1 = dbt_node(n, r, 1);
      if (n % 2 == 1) {
        const TreeNode t0 = btree_node(n, mod(r - 1, n));
        EXPECT_EQ(t1.parent, t0.parent < 0 ? -1 : mod(t0.parent + 1, n));
      } else {
        const TreeNode t0 = btree_node(n, n - 1 - r);
        EXPECT_EQ(t1.parent, t0.parent < 0 ? -1 : n - 1 - t0.parent);
      }
    }
  EXPECT_EQ(dbt_root(4, 1), 3);
  EXPECT_EQ(dbt_node(4, 1, 1).parent, 3);   // 3 - 1 - {2, 0}
  EXPECT_EQ(dbt_node(4, 2, 1).parent, 1);
  EXPECT_EQ(dbt_node(4, 0, 1).parent, 1);
  EXPECT_EQ(dbt_root(5, 1), 1);
}

TEST(Tree, EvenSizesHaveEachRankInteriorInAtMostOneTree) {
  for (int n = 2; n <= 64; n += 2)
    for (int r = 0; r < n; ++r) {
      const int interior = (dbt_node(n, r, 0).num_children() > 0) +
                           (dbt_node(n, r, 1).num_children() > 0);
      EXPECT_LE(interior, 1) << "n=" << n << " rank " << r;
    }
}

TEST(HalvingDoubling, FoldPairsRanksAndVirtualRanksAreABijection) {
  for (int n = 1; n <= 33; ++n) {
    const int p = largest_pof2_at_most(n);
    EXPECT_LE(p, n);
    EXPECT_GT(2 * p, n);
    std::set<int> vranks;
    for (int r = 0; r < n; ++r) {
      const HdLayout l = hd_layout(n, r);
      if (l.role != FoldRole::none) {
        EXPECT_EQ(hd_layout(n, l.fold_peer).fold_peer, r);
      }
      if (l.vrank >= 0) {
        EXPECT_TRUE(vranks.insert(l.vrank).second);
        EXPECT_EQ(hd_real_rank(n, l.vrank), r);
      }
    }
    EXPECT_EQ(vranks.size(), static_cast<std::size_t>(p));
  }
}

// The shared halving and doubling's two cuts of the vector: p blocks, or the N blocks
// with virtual block v standing for the real blocks of the ranks v stands for. Either
// way the p virtual blocks tile the vector in order.
TEST(HalvingDoubling, HdRangeIsTheCutItNames) {
  for (int n = 2; n <= 17; ++n) {
    const int p = largest_pof2_at_most(n);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t(n) - 1, std::size_t(n) + 1,
                              std::size_t{101}}) {
      std::size_t next[2] = {0, 0};
      for (int v = 0; v < p; ++v) {
        const Block even = hd_range(count, n, HdBlocks::pof2, v, 1);
        const Block folded = hd_range(count, n, HdBlocks::folded, v, 1);
        EXPECT_EQ(even.offset, block_of(count, p, v).offset) << n << " " << count << " " << v;
        EXPECT_EQ(even.count, block_of(count, p, v).count);
        const int first = folded_first_block(n, v), len = folded_first_block(n, v + 1) - first;
        EXPECT_EQ(folded.offset, block_range(count, n, first, len).offset);
        EXPECT_EQ(folded.count, block_range(count, n, first, len).count);
        EXPECT_EQ(even.offset, next[0]);
        EXPECT_EQ(folded.offset, next[1]);
        next[0] += even.count;
        next[1] += folded.count;
      }
      EXPECT_EQ(next[0], count);
      EXPECT_EQ(next[1], count);
      EXPECT_EQ(hd_range(count, n, HdBlocks::pof2, 0, p).count, count);
      EXPECT_EQ(hd_range(count, n, HdBlocks::folded, 0, p).count, count);
    }
  }
}

TEST(HalvingDoubling, PartnersAgreeAndEachVirtualRankEndsOwningItsBlock) {
  for (int n = 2; n <= 33; ++n) {
    const int p = largest_pof2_at_most(n);
    for (int v = 0; v < p; ++v) {
      const auto rs = hd_reduce_scatter_steps(n, v);
      const auto ag = hd_allgather_steps(n, v);
      ASSERT_EQ(rs.size(), ag.size());
      std::vector<int> got(static_cast<std::size_t>(p), 0);
      got[v] = 1;  // after the halving, block v is mine
      for (std::size_t k = 0; k < rs.size(); ++k) {
        const int pv = hd_layout(n, rs[k].peer).vrank;
        const auto prs = hd_reduce_scatter_steps(n, pv);
        EXPECT_EQ(prs[k].peer, hd_real_rank(n, v));
        EXPECT_EQ(prs[k].send_first, rs[k].recv_first);  // what it sends is what I keep
        EXPECT_EQ(prs[k].send_len, rs[k].recv_len);
        for (int b = ag[k].recv_first; b < ag[k].recv_first + ag[k].recv_len; ++b) ++got[b];
      }
      EXPECT_EQ(rs.back().recv_first, v);
      EXPECT_EQ(rs.back().recv_len, 1);
      for (int b = 0; b < p; ++b) EXPECT_EQ(got[b], 1) << "n=" << n << " v=" << v << " block " << b;
    }
  }
}

}  // namespace
}  // namespace collscope::patterns

// Open MPI's fixed trees: every rank but the root has one parent, below it in virtual
// rank order (height() relies on it), that lists it among its children; the height is
// the deepest rank's depth.
TEST(StaticTree, ParentsPrecedeChildrenAndTheHeightIsTheDeepestDepth) {
  using collscope::patterns::StaticTree;
  using collscope::patterns::TreeShape;
  for (TreeShape shape : {TreeShape::kary, TreeShape::strided_binomial, TreeShape::knomial,
                          TreeShape::chain, TreeShape::star, TreeShape::binomial})
    for (int fanout : {2, 3, 4})
      for (int n = 1; n <= 70; ++n) {
        const StaticTree t{shape, n, n / 3, fanout};
        int deepest = 0;
        for (int v = 1; v < n; ++v) {
          const int p = t.parent(v);
          ASSERT_TRUE(p >= 0 && p < v) << "N " << n << " v " << v;
          const std::vector<int> siblings = t.children(p);
          EXPECT_EQ(std::count(siblings.begin(), siblings.end(), v), 1) << "N " << n << " v " << v;
          deepest = std::max(deepest, t.depth(v));
        }
        EXPECT_EQ(t.height(), deepest) << "N " << n << " fanout " << fanout;
      }
}
