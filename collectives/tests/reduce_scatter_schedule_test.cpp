// The reduce-scatter schedules (ring, recursive halving with the fold), checked without
// any communication: peers agree, every rank ends with its own block holding every
// rank's contribution exactly once.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/theory.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/patterns/ring.hpp"
#include "collscope/patterns/ring_own_block.hpp"
#include "test_args.hpp"

namespace collscope::patterns {
namespace {

TEST(ReduceScatterRing, EndsWithOwnBlockAndForwardsWhatItReduced) {
  for (int n = 2; n <= 9; ++n)
    for (int r = 0; r < n; ++r) {
      std::set<int> sent;
      for (int k = 0; k < n - 1; ++k) {
        EXPECT_EQ(own_ring_rs_recv_block(r, n, k), own_ring_rs_send_block(ring_prev(r, n), n, k));
        if (k > 0) {  // forwards the partial sum it made last step
          EXPECT_EQ(own_ring_rs_send_block(r, n, k), own_ring_rs_recv_block(r, n, k - 1));
        }
        sent.insert(own_ring_rs_send_block(r, n, k));
      }
      EXPECT_EQ(own_ring_rs_recv_block(r, n, n - 2), r);
      EXPECT_EQ(sent.size(), static_cast<std::size_t>(n - 1));
      EXPECT_EQ(sent.count(r), 0u);
    }
}

// Contributions (sets of ranks) to each real block, simulated through the ring.
TEST(ReduceScatterRing, OwnBlockCollectsEveryContributionOnce) {
  for (int n = 2; n <= 9; ++n) {
    // partial[r]: the contributions in the partial sum rank r sends next.
    std::vector<std::multiset<int>> partial(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) partial[r] = {r};
    for (int k = 0; k < n - 1; ++k) {
      std::vector<std::multiset<int>> next(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        next[r] = partial[ring_prev(r, n)];
        next[r].insert(r);
      }
      partial = next;
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(partial[r].size(), static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) EXPECT_EQ(partial[r].count(c), 1u);
  }
}

// Simulates the halving on (real block -> contributions) maps, fold and unfold included.
TEST(ReduceScatterHalving, EveryRankEndsWithItsBlockFullyReduced) {
  for (int n = 1; n <= 17; ++n) {
    using Sums = std::map<int, std::multiset<int>>;  // real block -> contributing ranks
    std::vector<Sums> held(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      for (int b = 0; b < n; ++b) held[r][b] = {r};
    for (int r = 0; r < n; ++r) {  // fold: 2v's whole vector into 2v+1
      const HdLayout l = hd_layout(n, r);
      if (l.role == FoldRole::sender)
        for (int b = 0; b < n; ++b) held[l.fold_peer][b].insert(r);
    }
    const int p = largest_pof2_at_most(n);
    std::vector<std::vector<HdStep>> steps(static_cast<std::size_t>(p));
    for (int v = 0; v < p; ++v) steps[v] = hd_reduce_scatter_steps(n, v);
    for (std::size_t k = 0; k < steps[0].size(); ++k) {
      std::vector<Sums> next = held;
      for (int v = 0; v < p; ++v) {
        const HdStep& s = steps[v][k];
        const int me = hd_real_rank(n, v);
        const int pv = hd_layout(n, s.peer).vrank;
        ASSERT_GE(pv, 0);
        EXPECT_EQ(steps[pv][k].peer, me);
        EXPECT_EQ(steps[pv][k].send_first, s.recv_first);
        EXPECT_EQ(steps[pv][k].send_len, s.recv_len);
        next[me].clear();  // keeps only the received range, now reduced
        for (int b = folded_first_block(n, s.recv_first);
             b < folded_first_block(n, s.recv_first + s.recv_len); ++b) {
          next[me][b] = held[me][b];
          next[me][b].insert(held[s.peer][b].begin(), held[s.peer][b].end());
        }
      }
      held = next;
    }
    for (int r = 0; r < n; ++r) {
      const HdLayout l = hd_layout(n, r);
      const int keeper = l.role == FoldRole::sender ? l.fold_peer : r;  // unfold
      ASSERT_TRUE(held[keeper].count(r)) << "n=" << n << " r=" << r;
      const std::multiset<int>& c = held[keeper][r];
      EXPECT_EQ(c.size(), static_cast<std::size_t>(n)) << "n=" << n << " r=" << r;
      for (int i = 0; i < n; ++i) EXPECT_EQ(c.count(i), 1u);
    }
  }
}

using test::args_of;

// Even blocks of 1000 floats: the textbook (N-1)/N of the vector, each way.
TEST(ReduceScatterTheory, ClosedFormsForEvenBlocks) {
  for (int n = 1; n <= 16; ++n) {
    const std::uint64_t rest = 4000 * static_cast<std::uint64_t>(n - 1);
    const CollArgs a = args_of(1000 * static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      const RankVolume ring = theory_total(theory::reduce_scatter_ring, r, n, a);
      EXPECT_EQ(ring.sent_bytes, rest);
      EXPECT_EQ(ring.recv_bytes, rest);
      EXPECT_EQ(ring.recv_msgs, static_cast<std::uint64_t>(n - 1));
      if (largest_pof2_at_most(n) == n) {
        const RankVolume h = theory_total(theory::reduce_scatter_halving, r, n, a);
        EXPECT_EQ(h.sent_bytes, rest);
        EXPECT_EQ(h.recv_bytes, rest);
      }
    }
  }
}

// N = 3, count 9 floats: rank 0 sends its whole vector (36 B) and gets block 0 back;
// rank 1 takes it, sends block 2 to rank 2 and receives blocks 0,1 from it, returns block 0.
TEST(ReduceScatterTheory, HalvingFoldForThreeRanks) {
  const CollArgs a = args_of(9);
  const RankVolume r0 = theory_total(theory::reduce_scatter_halving, 0, 3, a);
  EXPECT_EQ(r0.sent_bytes, 36u);
  EXPECT_EQ(r0.recv_bytes, 12u);
  const RankVolume r1 = theory_total(theory::reduce_scatter_halving, 1, 3, a);
  EXPECT_EQ(r1.sent_bytes, 12u + 12u);
  EXPECT_EQ(r1.recv_bytes, 36u + 24u);
  EXPECT_EQ(r1.sent_msgs, 2u);
  const RankVolume r2 = theory_total(theory::reduce_scatter_halving, 2, 3, a);
  EXPECT_EQ(r2.sent_bytes, 24u);
  EXPECT_EQ(r2.recv_bytes, 12u);
}

}  // namespace
}  // namespace collscope::patterns
