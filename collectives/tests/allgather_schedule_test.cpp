// The allgather schedules (ring, recursive doubling with the fold, Bruck), checked
// without any communication: peers agree, every rank ends with every block exactly once.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "collscope/theory.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/patterns/bruck.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/ring_own_block.hpp"
#include "test_args.hpp"

namespace collscope::patterns {
namespace {

TEST(AllgatherRing, ForwardsWhatArrivedAndGathersEveryBlockOnce) {
  for (int n = 2; n <= 9; ++n)
    for (int r = 0; r < n; ++r) {
      std::set<int> have = {r};
      EXPECT_EQ(own_ring_ag_send_block(r, n, 0), r);  // starts with its own block
      for (int k = 0; k < n - 1; ++k) {
        EXPECT_EQ(own_ring_ag_recv_block(r, n, k), own_ring_ag_send_block(ring_prev(r, n), n, k));
        EXPECT_TRUE(have.count(own_ring_ag_send_block(r, n, k)));  // sends only what it has
        EXPECT_TRUE(have.insert(own_ring_ag_recv_block(r, n, k)).second);
      }
      EXPECT_EQ(have.size(), static_cast<std::size_t>(n));
    }
}

TEST(FoldedBlocks, VirtualBlocksTileTheRealOnesInOrder) {
  for (int n = 1; n <= 17; ++n) {
    const int p = largest_pof2_at_most(n);
    EXPECT_EQ(folded_first_block(n, 0), 0);
    EXPECT_EQ(folded_first_block(n, p), n);
    for (int v = 0; v < p; ++v) {
      const int lo = folded_first_block(n, v), hi = folded_first_block(n, v + 1);
      EXPECT_EQ(hi - lo, v < n - p ? 2 : 1);
      // Virtual block v is the blocks of the ranks virtual rank v stands for.
      EXPECT_EQ(hd_real_rank(n, v), hi - 1);
    }
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{100}}) {
      const Block all = folded_range(count, n, 0, p);
      EXPECT_EQ(all.offset, 0u);
      EXPECT_EQ(all.count, count);
    }
  }
}

// Simulates the doubling on sets of real blocks, fold and unfold included.
TEST(AllgatherRecursiveDoubling, EveryRankGathersEveryBlockOnce) {
  for (int n = 1; n <= 17; ++n) {
    std::vector<std::set<int>> have(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) have[r].insert(r);
    for (int r = 0; r < n; ++r) {  // fold: 2v's block to 2v+1
      const HdLayout l = hd_layout(n, r);
      if (l.role == FoldRole::sender) have[l.fold_peer].insert(r);
    }
    const int p = largest_pof2_at_most(n);
    std::vector<std::vector<HdStep>> steps(static_cast<std::size_t>(p));
    for (int v = 0; v < p; ++v) steps[v] = hd_allgather_steps(n, v);
    for (std::size_t k = 0; k < steps[0].size(); ++k) {
      std::vector<std::set<int>> next = have;
      for (int v = 0; v < p; ++v) {
        const HdStep& s = steps[v][k];
        const int me = hd_real_rank(n, v);
        const int pv = hd_layout(n, s.peer).vrank;
        ASSERT_GE(pv, 0);
        EXPECT_EQ(steps[pv][k].peer, me);  // partners agree
        EXPECT_EQ(steps[pv][k].send_first, s.recv_first);
        EXPECT_EQ(steps[pv][k].send_len, s.recv_len);
        for (int b = folded_first_block(n, s.recv_first);
             b < folded_first_block(n, s.recv_first + s.recv_len); ++b) {
          EXPECT_TRUE(have[s.peer].count(b)) << "peer sends a block it lacks";
          EXPECT_TRUE(next[me].insert(b).second) << "received twice";
        }
      }
      have = next;
    }
    for (int r = 0; r < n; ++r) {
      const HdLayout l = hd_layout(n, r);
      if (l.role == FoldRole::sender) have[r] = have[l.fold_peer];  // unfold
      EXPECT_EQ(have[r].size(), static_cast<std::size_t>(n)) << "n=" << n << " r=" << r;
    }
  }
}

TEST(Bruck, StepCountIsCeilLog2) {
  EXPECT_EQ(bruck_num_steps(1), 0);
  EXPECT_EQ(bruck_num_steps(2), 1);
  EXPECT_EQ(bruck_num_steps(3), 2);
  EXPECT_EQ(bruck_num_steps(4), 2);
  EXPECT_EQ(bruck_num_steps(5), 3);
  EXPECT_EQ(bruck_num_steps(8), 3);
  EXPECT_EQ(bruck_num_steps(9), 4);
}

// Simulates the rotated buffers: after the steps, rotated block i of rank r is real
// block r + i, each filled once, from a peer that already held it.
TEST(Bruck, RotatedBuffersFillExactlyOnce) {
  for (int n = 1; n <= 17; ++n) {
    std::vector<std::vector<int>> rot(static_cast<std::size_t>(n), std::vector<int>(n, -1));
    for (int r = 0; r < n; ++r) rot[r][0] = r;
    for (int k = 0; k < bruck_num_steps(n); ++k) {
      const auto before = rot;
      for (int r = 0; r < n; ++r) {
        const BruckStep s = bruck_step(r, n, k);
        EXPECT_EQ(bruck_step(s.recv_from, n, k).send_to, r);
        EXPECT_EQ(bruck_step(s.recv_from, n, k).nblocks, s.nblocks);
        for (int i = 0; i < s.nblocks; ++i) {
          EXPECT_EQ(rot[r][s.distance + i], -1) << "filled twice";
          ASSERT_NE(before[s.recv_from][i], -1) << "sender lacks the block";
          rot[r][s.distance + i] = before[s.recv_from][i];
        }
      }
    }
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < n; ++i) EXPECT_EQ(rot[r][i], mod(r + i, n)) << n << " " << r;
  }
}

TEST(Bruck, RotatedRangesMatchTheRealBlocks) {
  for (int n = 1; n <= 9; ++n)
    for (std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{10}, std::size_t{23}})
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(rotated_offset(count, n, r, 0), 0u);
        EXPECT_EQ(rotated_range(count, n, r, 0, n).count, count);
        for (int i = 0; i < n; ++i) {
          const Block b = rotated_range(count, n, r, i, 1);
          EXPECT_EQ(b.count, block_of(count, n, mod(r + i, n)).count);
        }
      }
}

using test::args_of;

// Even blocks of 1000 floats: the textbook (N-1)/N of the vector, each way.
TEST(AllgatherTheory, ClosedFormsForEvenBlocks) {
  for (int n = 1; n <= 16; ++n) {
    const std::uint64_t block = 4000, rest = block * static_cast<std::uint64_t>(n - 1);
    const CollArgs a = args_of(1000 * static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      const RankVolume ring = theory_total(theory::allgather_ring, r, n, a);
      EXPECT_EQ(ring.sent_bytes, rest);
      EXPECT_EQ(ring.recv_bytes, rest);
      EXPECT_EQ(ring.sent_msgs, static_cast<std::uint64_t>(n - 1));
      const RankVolume bruck = theory_total(theory::allgather_bruck, r, n, a);
      EXPECT_EQ(bruck.sent_bytes, rest);
      EXPECT_EQ(bruck.recv_bytes, rest);
      EXPECT_EQ(bruck.recv_msgs, static_cast<std::uint64_t>(bruck_num_steps(n)));
      if (largest_pof2_at_most(n) == n) {  // no fold: log2 N exchanges
        const RankVolume rd = theory_total(theory::allgather_recursive_doubling, r, n, a);
        EXPECT_EQ(rd.sent_bytes, rest);
        EXPECT_EQ(rd.recv_bytes, rest);
        EXPECT_EQ(rd.sent_msgs, static_cast<std::uint64_t>(bruck_num_steps(n)));
      }
    }
  }
}

// N = 3 (p = 2), count 9 floats, blocks of 3: rank 0 sends its block and receives the
// other two in one message (nothing before its block); rank 1 receives block 0, swaps
// blocks {0,1} for {2} with rank 2, and sends blocks 1,2 back to rank 0.
TEST(AllgatherTheory, RecursiveDoublingFoldForThreeRanks) {
  const CollArgs a = args_of(9);
  const RankVolume r0 = theory_total(theory::allgather_recursive_doubling, 0, 3, a);
  EXPECT_EQ(r0.sent_bytes, 12u);
  EXPECT_EQ(r0.recv_bytes, 24u);
  EXPECT_EQ(r0.recv_msgs, 1u);
  const RankVolume r1 = theory_total(theory::allgather_recursive_doubling, 1, 3, a);
  EXPECT_EQ(r1.sent_bytes, 24u + 24u);
  EXPECT_EQ(r1.recv_bytes, 12u + 12u);
  EXPECT_EQ(r1.sent_msgs, 2u);
  const RankVolume r2 = theory_total(theory::allgather_recursive_doubling, 2, 3, a);
  EXPECT_EQ(r2.sent_bytes, 12u);
  EXPECT_EQ(r2.recv_bytes, 24u);
}

}  // namespace
}  // namespace collscope::patterns
