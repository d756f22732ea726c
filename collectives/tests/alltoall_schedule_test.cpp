// The all-to-all schedules (pairwise, store-and-forward ring, Bruck), checked without
// any communication: every block reaches its destination exactly once, sender and
// receiver agree on every step, and the theory says what the schedules move.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <utility>
#include <vector>

#include "collscope/theory.hpp"
#include "collscope/patterns/alltoall_bruck.hpp"
#include "collscope/patterns/alltoall_ring.hpp"
#include "collscope/patterns/pairwise.hpp"
#include "test_args.hpp"

namespace collscope::patterns {
namespace {

using BlockId = std::pair<int, int>;  // (origin rank, destination rank)

TEST(Pairwise, EveryOrderedPairMeetsOnceAndBothSidesAgree) {
  for (int n = 1; n <= 17; ++n) {
    std::map<BlockId, int> meetings;
    for (int k = 1; k <= pairwise_steps(n); ++k)
      for (int r = 0; r < n; ++r) {
        const int to = pairwise_send_peer(r, n, k);
        EXPECT_NE(to, r);
        EXPECT_EQ(pairwise_recv_peer(to, n, k), r) << n << " " << k << " " << r;
        EXPECT_EQ(pairwise_step_of(r, to, n), k);
        ++meetings[{r, to}];
      }
    EXPECT_EQ(meetings.size(), static_cast<std::size_t>(n * (n - 1))) << n;
    for (const auto& [pair, times] : meetings) EXPECT_EQ(times, 1) << n;
  }
}

// Runs the ring schedule on (origin, destination) labels and checks every message
// against the pattern functions; returns how many times each block was kept.
std::map<BlockId, int> simulate_ring(int n) {
  std::vector<std::vector<BlockId>> msg(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    for (int d = 1; d < n; ++d) msg[static_cast<std::size_t>(r)].push_back({r, mod(r + d, n)});
  std::map<BlockId, int> kept;
  for (int k = 0; k < a2a_ring_steps(n); ++k) {
    std::vector<std::vector<BlockId>> next(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      const auto& out = msg[static_cast<std::size_t>(r)];
      const int to = a2a_ring_next(r, n);
      EXPECT_EQ(a2a_ring_prev(to, n), r);
      EXPECT_EQ(static_cast<int>(out.size()), a2a_ring_blocks_at(n, k)) << n << " " << k;
      for (int i = 0; i < static_cast<int>(out.size()); ++i) {
        const BlockId b = out[static_cast<std::size_t>(i)];
        EXPECT_EQ(b, BlockId(a2a_ring_send_origin(r, n, k), a2a_ring_send_dest(r, n, i)));
        EXPECT_EQ(b, BlockId(a2a_ring_recv_origin(to, n, k), a2a_ring_recv_dest(to, n, i)));
      }
      EXPECT_EQ(out.front().second, to);  // the receiver keeps the first block
      ++kept[out.front()];
      next[static_cast<std::size_t>(to)].assign(out.begin() + 1, out.end());
    }
    msg = std::move(next);
  }
  for (const auto& m : msg) EXPECT_TRUE(m.empty()) << n;
  return kept;
}

TEST(AlltoallRing, EveryBlockArrivesOnceAfterNMinusOneSteps) {
  for (int n = 2; n <= 17; ++n) {
    const std::map<BlockId, int> kept = simulate_ring(n);
    EXPECT_EQ(kept.size(), static_cast<std::size_t>(n * (n - 1))) << n;
    for (const auto& [block, times] : kept) EXPECT_EQ(times, 1) << n;
  }
}

TEST(AlltoallBruck, StepsAreCeilLog2) {
  const int want[] = {0, 0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5};
  for (int n = 1; n <= 17; ++n) EXPECT_EQ(a2a_bruck_steps(n), want[n]) << n;
}

TEST(AlltoallBruck, BlocksAtCountsThePositionsWithTheBitSet) {
  for (int n = 1; n <= 70; ++n)
    for (int k = 0; k < a2a_bruck_steps(n); ++k) {
      int moved = 0;
      for (int i = 0; i < n; ++i) moved += a2a_bruck_moves(i, k) ? 1 : 0;
      EXPECT_EQ(a2a_bruck_blocks_at(n, k), moved) << n << " " << k;
      EXPECT_GE(moved, 1);
      EXPECT_LE(moved, a2a_bruck_max_blocks(n));
    }
}

TEST(AlltoallBruck, EveryBlockReachesItsDestinationExactlyOnce) {
  for (int n = 1; n <= 17; ++n) {
    // work[r][i]: the block at position i of rank r, after the rotation.
    std::vector<std::vector<BlockId>> work(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < n; ++i)
        work[static_cast<std::size_t>(r)].push_back({r, a2a_bruck_first_block(r, n, i)});
    std::map<BlockId, int> hops;
    for (int k = 0; k < a2a_bruck_steps(n); ++k) {
      auto next = work;
      for (int r = 0; r < n; ++r) {
        const int to = a2a_bruck_send_peer(r, n, k);
        EXPECT_EQ(a2a_bruck_recv_peer(to, n, k), r);
        for (int i = 0; i < n; ++i)
          if (a2a_bruck_moves(i, k)) {
            const BlockId b = work[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
            next[static_cast<std::size_t>(to)][static_cast<std::size_t>(i)] = b;
            ++hops[b];
          }
      }
      work = std::move(next);
    }
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < n; ++i) {
        const BlockId b = work[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
        // Position i ends in receive block r-i, which must come from rank r-i.
        EXPECT_EQ(b, BlockId(a2a_bruck_last_block(r, n, i), r)) << n << " " << r << " " << i;
        EXPECT_EQ(hops[b], std::popcount(static_cast<unsigned>(i)));
      }
  }
}

using test::args_of;

TEST(AlltoallTheory, PairwiseMovesNMinusOneBlocksInNMinusOneMessages) {
  for (int n = 1; n <= 9; ++n)
    for (int r = 0; r < n; ++r) {
      const RankVolume v = theory_total(theory::alltoall_pairwise, r, n, args_of(5, DataType::float64));
      const auto peers = static_cast<std::uint64_t>(n - 1);
      EXPECT_EQ(v, (RankVolume{peers * 40, peers, peers * 40, peers}));
    }
  EXPECT_EQ(theory_total(theory::alltoall_pairwise, 0, 4, args_of(0)), RankVolume{});
}

TEST(AlltoallTheory, RingMovesNTimesNMinusOneOverTwoBlocks) {
  for (int n = 1; n <= 9; ++n) {
    const auto blocks = static_cast<std::uint64_t>(n * (n - 1) / 2);
    const auto msgs = static_cast<std::uint64_t>(n - 1);
    EXPECT_EQ(theory_total(theory::alltoall_ring, n - 1, n, args_of(3)),
              (RankVolume{blocks * 12, msgs, blocks * 12, msgs}));
  }
  EXPECT_EQ(theory_total(theory::alltoall_ring, 1, 5, args_of(0)), RankVolume{});
}

TEST(AlltoallTheory, BruckMovesMoreBytesInFewerMessagesThanPairwise) {
  for (int n = 1; n <= 64; ++n) {
    std::uint64_t popcounts = 0;
    for (int i = 0; i < n; ++i)
      popcounts += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(i)));
    const auto steps = static_cast<std::uint64_t>(a2a_bruck_steps(n));
    const RankVolume bruck = theory_total(theory::alltoall_bruck, 0, n, args_of(1));
    EXPECT_EQ(bruck, (RankVolume{popcounts * 4, steps, popcounts * 4, steps})) << n;
    const RankVolume pair = theory_total(theory::alltoall_pairwise, 0, n, args_of(1));
    if (n <= 3) {  // 1, 2, 3 ranks: the two schedules move the same
      EXPECT_EQ(bruck, pair) << n;
    } else {
      EXPECT_GT(bruck.sent_bytes, pair.sent_bytes) << n;
      EXPECT_LT(bruck.sent_msgs, pair.sent_msgs) << n;
    }
  }
  // N = 8: 12 blocks in 3 messages against 7 in 7.
  EXPECT_EQ(theory_total(theory::alltoall_bruck, 3, 8, args_of(1, DataType::int8)), (RankVolume{12, 3, 12, 3}));
}

}  // namespace
}  // namespace collscope::patterns
