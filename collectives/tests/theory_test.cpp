// The exact theory against closed forms and conservation laws.
#include <gtest/gtest.h>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/theory.hpp"
#include "collscope/collective.hpp"
#include "collscope/patterns/tree.hpp"
#include "collscope/verify/splits.hpp"
#include "test_args.hpp"

namespace collscope {
namespace {

using test::args_of;

// Conservation over every algorithm's theory: what all ranks send, all ranks receive.
// all-to-all-v gets a uniform split matrix of `count` per rank; the barrier has no data
// but still sends its zero-byte signals.
TEST(Theory, EveryByteSentIsReceived) {
  for (const Algorithm& algo : all_algorithms()) {
    if (!algo.theory) continue;
    const CollectiveInfo& info = algo.info();
    for (int n = 1; n <= 12; ++n)
      for (std::size_t count : {0ul, 1ul, 7ul, 100ul, 100003ul}) {
        CollArgs a = args_of(count);
        const std::vector<std::uint64_t> splits =
            verify::make_splits(verify::SplitPattern::random, count, n, 3);
        a.splits = splits;
        for (int root : {0, n - 1}) {
          a.root = root;
          RankVolume total;
          for (int r = 0; r < n; ++r) total += theory_total(algo.theory, r, n, a);
          const std::string what = algo.full_name() +
                                   " n=" + std::to_string(n) + " count=" + std::to_string(count);
          EXPECT_EQ(total.sent_bytes, total.recv_bytes) << what;
          EXPECT_EQ(total.sent_msgs, total.recv_msgs) << what;
          if (n == 1 || (count == 0 && info.has_data)) {
            EXPECT_EQ(total.sent_bytes + total.sent_msgs, 0u) << what;
          }
        }
      }
  }
}

TEST(Theory, RingSendsTwoTimesNMinusOneOverN) {
  for (int n = 2; n <= 9; ++n) {
    const std::size_t count = 1000 * static_cast<std::size_t>(n);  // even blocks
    for (int r = 0; r < n; ++r) {
      const RankVolume v = theory_total(theory::allreduce_ring, r, n, args_of(count));
      EXPECT_EQ(v.sent_bytes, 2 * (n - 1) * 1000 * 4u);
      EXPECT_EQ(v.recv_bytes, v.sent_bytes);
      EXPECT_EQ(v.sent_msgs, 2u * (n - 1));
    }
  }
  // Uneven: count 10 over 4 ranks -> blocks 3,3,2,2 (float). Rank 0 skips block 1 in the
  // reduce-scatter and block 2 in the allgather: (10-3) + (10-2) = 15 elements.
  EXPECT_EQ(theory_total(theory::allreduce_ring, 0, 4, args_of(10)).sent_bytes, 15 * 4u);
  // count 2 over 4 ranks: blocks 1,1,0,0; empty blocks send no message. Rank 3 sends
  // blocks 1,2,3 (reduce-scatter) and 0,2,3 (allgather): one non-empty block each.
  EXPECT_EQ(theory_total(theory::allreduce_ring, 3, 4, args_of(2)).sent_msgs, 2u);
}

TEST(Theory, DirectSendsTheWholeVectorToEveryPeer) {
  EXPECT_EQ(theory_total(theory::allreduce_direct, 0, 5, args_of(100)).sent_bytes, 4 * 400u);
  EXPECT_EQ(theory_total(theory::allreduce_direct, 0, 5, args_of(100)).recv_msgs, 4u);
}

TEST(Theory, TreeLeavesMoveTwiceTheDataInnerNodesMore) {
  const CollArgs a = args_of(1 << 20);  // 4 MiB, 4 segments of 1 MiB
  const RankVolume leaf = theory_total(theory::allreduce_tree, 1, 8, a);  // rank 1: leaf
  EXPECT_EQ(leaf.sent_bytes + leaf.recv_bytes, 2 * a.bytes());
  EXPECT_EQ(leaf.sent_msgs, 4u);
  const RankVolume inner = theory_total(theory::allreduce_tree, 2, 8, a);  // rank 2: parent 4, children 1, 3
  EXPECT_EQ(inner.sent_bytes, 3 * a.bytes());
  const RankVolume root = theory_total(theory::allreduce_tree, 0, 8, a);  // one child
  EXPECT_EQ(root.sent_bytes, a.bytes());
}

TEST(Theory, DbtCarriesHalfOnEachTree) {
  const CollArgs a = args_of(1001);  // halves 501 and 500
  // N = 2: tree 0 is 0 <- 1, tree 1 is 1 <- 0; each rank is a leaf in one tree and the
  // root of the other, so it sends 501 + 500 elements.
  EXPECT_EQ(theory_total(theory::allreduce_dbt, 0, 2, a).sent_bytes, 1001 * 4u);
  EXPECT_EQ(theory_total(theory::allreduce_dbt, 1, 2, a).sent_bytes, 1001 * 4u);
  for (int n = 2; n <= 16; n += 2)
    for (int r = 0; r < n; ++r) {  // even N: links = children + parent, per tree
      RankVolume want;
      for (int t = 0; t < 2; ++t) {
        const patterns::TreeNode node = patterns::dbt_node(n, r, t);
        const std::uint64_t links = node.num_children() + (node.parent >= 0);
        want.sent_bytes += links * (t == 0 ? 501 : 500) * 4u;
      }
      EXPECT_EQ(theory_total(theory::allreduce_dbt, r, n, a).sent_bytes, want.sent_bytes);
    }
}

TEST(Theory, HalvingDoublingPowerOfTwoAndFold) {
  // N = 4, count 10 -> blocks 3,3,2,2. The halving sends all but block v; the doubling
  // sends back the ranges the halving kept. v0 keeps [0,2) = 6 then [0] = 3 elements:
  // (10 - 3) + (6 + 3) = 16. v3 keeps [2,4) = 4 then [3] = 2: (10 - 2) + (4 + 2) = 14.
  EXPECT_EQ(theory_total(theory::allreduce_halving_doubling, 0, 4, args_of(10)).sent_bytes, 16 * 4u);
  EXPECT_EQ(theory_total(theory::allreduce_halving_doubling, 3, 4, args_of(10)).sent_bytes, 14 * 4u);
  // Even blocks: 2 (p-1)/p of the vector each way.
  EXPECT_EQ(theory_total(theory::allreduce_halving_doubling, 5, 8, args_of(800)).sent_bytes, 2 * 700 * 4u);
  // N = 3: rank 0 folds into rank 1, sends and receives the whole vector once.
  const RankVolume folded = theory_total(theory::allreduce_halving_doubling, 0, 3, args_of(10));
  EXPECT_EQ(folded.sent_bytes, 40u);
  EXPECT_EQ(folded.recv_bytes, 40u);
  EXPECT_EQ(folded.sent_msgs, 1u);
  // Rank 1 (absorber, v0): fold in + unfold out + the power-of-two part with rank 2.
  EXPECT_EQ(theory_total(theory::allreduce_halving_doubling, 1, 3, args_of(10)).sent_bytes, 40u + 2 * 5 * 4u);
}

TEST(Theory, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(*find_collective("allreduce"), 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_factor(*find_collective("allgather"), 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(*find_collective("broadcast"), 4), 1.0);
}

// The point-to-point patterns' steps: a pair's round trip, a round of disjoint pairs, a
// ring shift, each cell by cell; 0 bytes are signals.
TEST(PointToPointTheory, PairRoundAndShiftCellByCell) {
  const auto cell = [](const std::vector<RankVolume>& t, int r, int p) {
    return t[static_cast<std::size_t>(r * 4 + p)];
  };
  const RankVolume leg{64, 1, 64, 1};  // sent bytes, msgs, received bytes, msgs
  const std::vector<RankVolume> pair = theory::p2p_pairs({{{1, 3}}}, 64, 4);
  for (int r = 0; r < 4; ++r)
    for (int p = 0; p < 4; ++p)
      EXPECT_EQ(cell(pair, r, p), (r == 1 && p == 3) || (r == 3 && p == 1) ? leg : RankVolume{})
          << r << "," << p;
  const P2pStep round{{{0, 3}, {1, 2}}};
  const std::vector<RankVolume> both = theory::p2p_rounds(round, 64, 4);
  EXPECT_EQ(cell(both, 0, 3), leg);
  EXPECT_EQ(cell(both, 2, 1), leg);
  EXPECT_EQ(cell(both, 0, 1), RankVolume{});
  // Shift 2 of 4: to r+2 and from r-2 are the same peer, one cell with both messages.
  const std::vector<RankVolume> half = theory::p2p_ring({{}, 2}, 8, 4);
  EXPECT_EQ(cell(half, 1, 3), (RankVolume{8, 1, 8, 1}));
  EXPECT_EQ(cell(half, 1, 2), RankVolume{});
  const std::vector<RankVolume> one = theory::p2p_ring({{}, 1}, 8, 4);
  EXPECT_EQ(cell(one, 1, 2), (RankVolume{8, 1, 0, 0}));  // sends to 2
  EXPECT_EQ(cell(one, 1, 0), (RankVolume{0, 0, 8, 1}));  // receives from 0
  const std::vector<RankVolume> signal = theory::p2p_pairs({{{0, 1}}}, 0, 2);
  EXPECT_EQ(cell(signal, 0, 1), (RankVolume{0, 1, 0, 1}));  // a 0-byte message counts
}

}  // namespace
}  // namespace collscope
