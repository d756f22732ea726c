// Rank groups (pure): Megatron's worked case and more layouts, every rank in exactly one
// group of each kind, and each divisibility violation's one-line message.
#include <gtest/gtest.h>

#include <algorithm>

#include "collscope/layers/framework/groups.hpp"

namespace collscope::layers {
namespace {

using Groups = std::vector<std::vector<int>>;

ParallelConfig config(int world, int tp, int cp, int pp, int ep, int etp) {
  return ParallelConfig{.world = world, .tp = tp, .cp = cp, .pp = pp, .ep = ep, .etp = etp};
}

// The worked case: world 16, TP 2, PP 2, EP 4, ETP 1 (so DP 4, expert DP 2).
TEST(RankGroups, MegatronWorkedCase) {
  const ParallelConfig c = config(16, 2, 1, 2, 4, 1);
  ASSERT_FALSE(config_violation(c));
  EXPECT_EQ(c.dp(), 4);
  EXPECT_EQ(c.edp(), 2);
  EXPECT_EQ(rank_groups(c, GroupKind::tp),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::dp),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::pp),
            (Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::ep),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::edp),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::etp).size(), 16u);  // ETP 1: singletons
  EXPECT_EQ(rank_groups(c, GroupKind::cp).size(), 16u);
}

// CP between TP and DP: rank = tp + TP (cp + CP (dp + DP pp)).
TEST(RankGroups, ContextParallelSitsBetweenTpAndDp) {
  const ParallelConfig c = config(16, 2, 2, 2, 1, 1);  // DP 2
  ASSERT_FALSE(config_violation(c));
  EXPECT_EQ(rank_groups(c, GroupKind::tp).front(), (std::vector<int>{0, 1}));
  EXPECT_EQ(rank_groups(c, GroupKind::cp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::dp),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::pp).front(), (std::vector<int>{0, 8}));
}

// Expert layout with ETP 2: etp fastest, then ep, then expert DP, then pp.
TEST(RankGroups, ExpertTensorParallel) {
  const ParallelConfig c = config(16, 2, 1, 1, 4, 2);  // EDP 2
  ASSERT_FALSE(config_violation(c));
  EXPECT_EQ(c.edp(), 2);
  EXPECT_EQ(rank_groups(c, GroupKind::etp).front(), (std::vector<int>{0, 1}));
  EXPECT_EQ(rank_groups(c, GroupKind::ep),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(rank_groups(c, GroupKind::edp).front(), (std::vector<int>{0, 8}));
}

// Every rank is in exactly one group of each kind, at the position group_of reports.
TEST(RankGroups, PartitionTheWorld) {
  for (const ParallelConfig& c : {config(16, 2, 1, 2, 4, 1), config(24, 3, 2, 2, 2, 3),
                                  config(12, 1, 3, 1, 6, 2), config(1, 1, 1, 1, 1, 1)}) {
    ASSERT_FALSE(config_violation(c));
    for (GroupKind k : {GroupKind::tp, GroupKind::cp, GroupKind::dp, GroupKind::pp,
                        GroupKind::ep, GroupKind::etp, GroupKind::edp}) {
      std::vector<int> seen(static_cast<std::size_t>(c.world), 0);
      const Groups groups = rank_groups(c, k);
      for (std::size_t g = 0; g < groups.size(); ++g) {
        ASSERT_EQ(static_cast<int>(groups[g].size()), group_size(c, k));
        for (std::size_t i = 0; i < groups[g].size(); ++i) {
          const int r = groups[g][i];
          ++seen[static_cast<std::size_t>(r)];
          const GroupPosition p = group_of(c, k, r);
          EXPECT_EQ(p.index, static_cast<int>(g));
          EXPECT_EQ(p.position, static_cast<int>(i));
          EXPECT_EQ(p.members, groups[g]);
        }
      }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }))
          << group_name(k) << " at world " << c.world;
    }
  }
}

std::string violation(const ParallelConfig& c, const ModelDims& d = {}) {
  return config_violation(c, d).value_or("(none)");
}

TEST(ConfigViolation, WorldByTpCpPp) {
  EXPECT_EQ(violation(config(6, 2, 1, 2, 1, 1)),
            "world size 6 is not divisible by TP x CP x PP = 4 (TP 2, CP 1, PP 2)");
  EXPECT_EQ(violation(config(8, 1, 3, 1, 1, 1)),
            "world size 8 is not divisible by TP x CP x PP = 3 (TP 1, CP 3, PP 1)");
}

TEST(ConfigViolation, WorldByEtpEpPp) {
  EXPECT_EQ(violation(config(8, 2, 1, 2, 3, 1)),
            "world size 8 is not divisible by ETP x EP x PP = 6 (ETP 1, EP 3, PP 2)");
}

TEST(ConfigViolation, DegreesAtLeastOne) {
  EXPECT_EQ(violation(config(4, 0, 1, 1, 1, 1)), "TP must be at least 1, got 0");
  EXPECT_EQ(violation(config(4, 1, 1, 1, 1, -2)), "ETP must be at least 1, got -2");
}

TEST(ConfigViolation, ModelDimensions) {
  const ParallelConfig c = config(8, 4, 1, 1, 8, 1);
  ModelDims d;
  d.heads = 6;
  EXPECT_EQ(violation(c, d), "number of attention heads 6 is not divisible by TP 4");
  d = {};
  d.experts = 12;
  EXPECT_EQ(violation(c, d), "number of experts 12 is not divisible by EP 8");
  d = {};
  d.sequence = 10;
  EXPECT_EQ(violation(c, d), "(none)");  // no sequence parallelism: any length
  d.sp = true;
  EXPECT_EQ(violation(c, d),
            "sequence length 10 is not divisible by TP 4 (sequence parallelism)");
  d = {};
  d.vocab = 1001;
  EXPECT_EQ(violation(c, d), "vocabulary size 1001 is not divisible by TP 4");
  d = {};
  d.ffn = 130;
  EXPECT_EQ(violation(c, d), "FFN size 130 is not divisible by TP 4");
  d = {};
  d.out_features = 30;
  EXPECT_EQ(violation(c, d), "output features 30 is not divisible by TP 4");
  d = {};
  d.heads = 8;
  d.experts = 16;
  d.sequence = 64;
  d.sp = true;
  d.vocab = 32000;
  d.ffn = 128;
  EXPECT_EQ(violation(c, d), "(none)");
}

}  // namespace
}  // namespace collscope::layers
