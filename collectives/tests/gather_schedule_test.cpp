// Blocks of binomial subtrees at any root (patterns/binomial.hpp), the gather theory,
// and conservation of every rooted algorithm's theory at every root.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/theory.hpp"
#include "collscope/patterns/binomial.hpp"
#include "test_args.hpp"

namespace collscope::patterns {
namespace {

TEST(RealRuns, SplitAVirtualRunAtTheEndOfTheRealRanks) {
  const auto runs = real_runs(6, 3, {2, 2});  // virtual 2, 3 = real 5, 0
  EXPECT_EQ(runs[0].first, 5);
  EXPECT_EQ(runs[0].len, 1);
  EXPECT_EQ(runs[1].first, 0);
  EXPECT_EQ(runs[1].len, 1);
  EXPECT_TRUE(run_wraps(6, 3, {2, 2}));
  EXPECT_FALSE(run_wraps(6, 3, {4, 2}));  // real 1, 2
  EXPECT_EQ(real_runs(6, 3, {4, 2})[0].first, 1);
  EXPECT_EQ(real_runs(6, 3, {4, 2})[1].len, 0);
}

// Each rank's real block appears in exactly one run of exactly one child subtree (or is
// the root's own), whatever the root: the subtrees' blocks cover the vector once.
TEST(RealRuns, ChildSubtreesCoverEveryBlockOnceAtEveryRoot) {
  for (int n = 1; n <= 17; ++n)
    for (int root = 0; root < n; ++root) {
      std::vector<int> hits(static_cast<std::size_t>(n), 0);
      hits[static_cast<std::size_t>(root)] = 1;
      int wrapped = 0;
      for (int c : binomial_children(n, 0)) {
        wrapped += run_wraps(n, root, binomial_subtree(n, c));
        for (const RankRun& run : real_runs(n, root, binomial_subtree(n, c)))
          for (int i = 0; i < run.len; ++i) ++hits[static_cast<std::size_t>(run.first + i)];
      }
      for (int h : hits) EXPECT_EQ(h, 1) << n << " " << root;
      EXPECT_LE(wrapped, 1);  // at most one child of the root holds the wrap
    }
}

TEST(RealRuns, ElementsOfAVirtualRunAddUpItsBlocks) {
  for (int n = 1; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (std::size_t count : {0u, 1u, 5u, 23u})
        for (int v = 0; v < n; ++v)
          for (int len = 0; v + len <= n; ++len) {
            std::size_t want = 0;
            for (int u = v; u < v + len; ++u)
              want += block_of(count, n, to_real(u, root, n)).count;
            EXPECT_EQ(virtual_run_elems(count, n, root, {v, len}), want);
          }
}

TEST(Staging, InnerRanksStageTheirSubtreeTheRootOnlyAWrappedChild) {
  EXPECT_EQ(binomial_staging_elems(60, 6, 0, 0), 0u);   // root 0: nothing wraps
  EXPECT_EQ(binomial_staging_elems(60, 6, 3, 0), 20u);  // root 3: v 2..3 = real 5, 0
  EXPECT_EQ(binomial_staging_elems(60, 6, 3, 4), 20u);  // inner: its subtree 4..5
  EXPECT_EQ(binomial_staging_elems(60, 6, 3, 5), 0u);   // a leaf sends in place
}

}  // namespace
}  // namespace collscope::patterns

namespace collscope {
namespace {

using test::rooted_args;

TEST(GatherTheory, TheRootReceivesEveryOtherBlock) {
  for (int n = 1; n <= 9; ++n)
    for (int root = 0; root < n; ++root)
      for (std::size_t count : {0u, 1u, 7u, 100u}) {
        const CollArgs a = rooted_args(count, root);
        const std::uint64_t others =
            (count - patterns::block_of(count, n, root).count) * a.elem_size();
        EXPECT_EQ(theory_total(theory::gather_linear, root, n, a).recv_bytes, others);
        EXPECT_EQ(theory_total(theory::gather_binomial, root, n, a).recv_bytes, others);
        EXPECT_EQ(theory_total(theory::gather_binomial, root, n, a).sent_bytes, 0u);
      }
}

TEST(GatherTheory, BinomialRootGetsOneMessagePerNonEmptyChild) {
  const CollArgs a = rooted_args(600, 3);
  EXPECT_EQ(theory_total(theory::gather_binomial, 3, 6, a).recv_msgs, 3u);
  EXPECT_EQ(theory_total(theory::gather_linear, 3, 6, a).recv_msgs, 5u);
  // count 2 over 6 ranks: blocks 1,1,0,0,0,0. Root 3's children: virtual 4 (subtree
  // real 1, 2), 2 (real 5, 0) and 1 (real 4): the last one is empty, no message.
  EXPECT_EQ(theory_total(theory::gather_binomial, 3, 6, rooted_args(2, 3)).recv_msgs, 2u);
  EXPECT_EQ(theory_total(theory::gather_linear, 3, 6, rooted_args(2, 3)).recv_msgs, 2u);
}

TEST(RootedTheory, EveryByteSentIsReceivedAtEveryRoot) {
  for (const Algorithm& algo : all_algorithms()) {
    if (!algo.theory || !algo.info().rooted) continue;
    for (int n = 1; n <= 12; ++n)
      for (int root = 0; root < n; ++root)
        for (std::size_t count : {0ul, 1ul, 7ul, 100ul, 100003ul}) {
          RankVolume total;
          for (int r = 0; r < n; ++r)
            total += theory_total(algo.theory, r, n, rooted_args(count, root, 4096));
          EXPECT_EQ(total.sent_bytes, total.recv_bytes) << algo.full_name();
          EXPECT_EQ(total.sent_msgs, total.recv_msgs) << algo.full_name();
          if (count == 0 || n == 1) {
            EXPECT_EQ(total.sent_bytes + total.sent_msgs, 0u);
          }
        }
  }
}

}  // namespace
}  // namespace collscope
