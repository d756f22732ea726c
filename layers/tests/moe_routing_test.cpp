// MoE routing (moe_routing.hpp): top-k in both orders, gradients through the gates
// against finite differences, the capacity drop, the permutation, the split matrices.
#include <gtest/gtest.h>

#include <numeric>

#include "collscope/layers/math/moe_routing.hpp"

namespace collscope::layers {
namespace {

TEST(MoeRouting, TopKDescendingTiesLowerIndexFirst) {
  const float row[5] = {0.5f, 2.0f, 0.5f, -1.0f, 2.0f};
  EXPECT_EQ(top_k(row, 5, 3), (std::vector<int>{1, 4, 0}));
}

TEST(MoeRouting, SoftmaxTopkGatesAreTheFullSoftmaxProbabilities) {
  const double l[4] = {1.0, 0.0, 2.0, -1.0};
  const int chosen[2] = {2, 0};
  double g[2];
  gates_of(l, 4, chosen, 2, RouterOrder::softmax_topk, g);
  const double z = std::exp(1.0) + 1 + std::exp(2.0) + std::exp(-1.0);
  EXPECT_NEAR(g[0], std::exp(2.0) / z, 1e-15);
  EXPECT_NEAR(g[1], std::exp(1.0) / z, 1e-15);
  gates_of(l, 4, chosen, 2, RouterOrder::topk_softmax, g);
  EXPECT_NEAR(g[0], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-15);
  EXPECT_NEAR(g[0] + g[1], 1.0, 1e-15);
}

TEST(MoeRouting, TopOneTopkSoftmaxGateIsExactlyOne) {
  const float l[3] = {0.3f, -2.0f, 0.1f};
  const int chosen[1] = {0};
  float g[1];
  gates_of(l, 3, chosen, 1, RouterOrder::topk_softmax, g);
  EXPECT_EQ(g[0], 1.0f);
}

void expect_gradient_matches_finite_differences(RouterOrder order) {
  const double l[5] = {0.3, -0.7, 1.1, 0.2, -0.1};
  const int chosen[2] = {2, 0};
  const double dg[2] = {0.8, -1.3};
  double dl[5];
  gates_backward(l, 5, chosen, 2, order, dg, dl);
  for (int e = 0; e < 5; ++e) {
    double lp[5], lm[5], gp[2], gm[2];
    std::copy(l, l + 5, lp);
    std::copy(l, l + 5, lm);
    lp[e] += 1e-6;
    lm[e] -= 1e-6;
    gates_of(lp, 5, chosen, 2, order, gp);
    gates_of(lm, 5, chosen, 2, order, gm);
    const double fd = (dg[0] * (gp[0] - gm[0]) + dg[1] * (gp[1] - gm[1])) / 2e-6;
    EXPECT_NEAR(dl[e], fd, 1e-8) << "expert " << e;
  }
}

TEST(MoeRouting, GateGradientsMatchFiniteDifferences) {
  expect_gradient_matches_finite_differences(RouterOrder::softmax_topk);
  expect_gradient_matches_finite_differences(RouterOrder::topk_softmax);
}

TEST(MoeRouting, UniformBiasSpreadsTokensEvenly) {
  RouterSpec s{8, 2, 0, RouterOrder::softmax_topk, RoutingMode::uniform};
  const std::size_t tokens = 12;  // T k = 24, divisible by 8
  std::vector<float> logits(tokens * 8);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t e = 0; e < 8; ++e)
      logits[t * 8 + e] = static_cast<float>(routing_bias(s, t, e)) + 0.01f * static_cast<float>(e);
  const Routing r = route(logits, tokens, s);
  for (std::int64_t c : r.counts) EXPECT_EQ(c, 3);
}

TEST(MoeRouting, CapacityKeepsHighestGatesWithoutRenormalising) {
  RouterSpec s{2, 1, 1.0, RouterOrder::softmax_topk, RoutingMode::learned};
  // 4 tokens, all prefer expert 0; capacity ceil(1 x 4 x 1 / 2) = 2.
  const std::vector<float> logits = {1.0f, 0.0f, 3.0f, 0.0f, 2.0f, 0.0f, 3.0f, 0.0f};
  const Routing r = route(logits, 4, s);
  EXPECT_EQ(expert_capacity(s, 4), 2u);
  EXPECT_EQ(r.kept, (std::vector<std::uint8_t>{0, 1, 0, 1}));  // gates 3, 3 kept (tie: token 1 first)
  EXPECT_EQ(r.counts, (std::vector<std::int64_t>{2, 0}));
  EXPECT_NEAR(r.gate[1], std::exp(3.0) / (std::exp(3.0) + 1), 1e-6);  // not renormalised
}

TEST(MoeRouting, PermutationSortsByExpertStableByToken) {
  Routing r;
  r.tokens = 3;
  r.topk = 2;
  r.experts = 3;
  r.expert = {2, 0, 0, 1, 2, 1};
  r.gate.assign(6, 0.5f);
  r.kept = {1, 1, 1, 1, 1, 0};
  permute(r);
  EXPECT_EQ(r.order, (std::vector<std::size_t>{1, 2, 3, 0, 4}));
  EXPECT_EQ(r.counts, (std::vector<std::int64_t>{2, 1, 2}));
}

TEST(MoeRouting, DispatchSplitsSumExpertsOfEachDestination) {
  // 2 ranks, 4 experts (2 each), H = 10.
  const std::vector<std::int64_t> counts = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(dispatch_splits(counts, 2, 4, 10), (std::vector<std::uint64_t>{30, 70, 110, 150}));
  EXPECT_EQ(transpose_splits({1, 2, 3, 4}, 2), (std::vector<std::uint64_t>{1, 3, 2, 4}));
}

TEST(MoeRouting, EtpSplits) {
  EXPECT_EQ(allgatherv_splits({1, 3}, 2), (std::vector<std::uint64_t>{2, 2, 6, 6}));
  EXPECT_EQ(reduce_scatterv_splits({1, 3}, 2), (std::vector<std::uint64_t>{2, 6, 2, 6}));
  // rows 1 and 4: total 5, blocks 3 and 2: rank 0 keeps its 1, rank 1 sends 2 to 0.
  EXPECT_EQ(rebalance_splits({1, 4}, 1), (std::vector<std::uint64_t>{1, 0, 2, 2}));
  EXPECT_EQ(even_block_start(5, 2, 1), 3u);
  EXPECT_EQ(even_block_size(5, 2, 1), 2u);
}

TEST(MoeRouting, SpansByExpertCutsTheWindow) {
  const std::vector<Segment> segs = {{2, 3}, {3, 2}, {2, 4}};  // rows 0-2 e2, 3-4 e3, 5-8 e2
  const auto spans = spans_by_expert(segs, 2, 7, 2, 2);
  ASSERT_EQ(spans.size(), 2u);
  ASSERT_EQ(spans[0].size(), 2u);
  EXPECT_EQ(spans[0][0].offset, 0u);
  EXPECT_EQ(spans[0][0].rows, 1u);
  EXPECT_EQ(spans[0][1].offset, 3u);
  EXPECT_EQ(spans[0][1].rows, 2u);
  ASSERT_EQ(spans[1].size(), 1u);
  EXPECT_EQ(spans[1][0].offset, 1u);
  EXPECT_EQ(spans[1][0].rows, 2u);
}

TEST(MoeRouting, ChoiceDisagreementsIgnoreNearTies) {
  const std::vector<double> l = {1.0, 1.0 + 1e-6, 0.0, /* token 1 */ 2.0, 0.0, 1.0};
  EXPECT_EQ(choice_disagreements(l, {0, 1}, 2, 3, 1, 1e-3), 1u);  // token 1 is far off
  EXPECT_EQ(choice_disagreements(l, {0, 0}, 2, 3, 1, 1e-3), 0u);
}

TEST(MoeRouting, BadNamesAreUsageErrors) {
  EXPECT_THROW(parse_router_order("topk"), std::runtime_error);
  EXPECT_THROW(parse_routing_mode("random"), std::runtime_error);
  EXPECT_EQ(parse_routing_mode("skewed"), RoutingMode::skewed);
}

}  // namespace
}  // namespace collscope::layers
