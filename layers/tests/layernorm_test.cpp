// LayerNorm (layernorm.hpp): a hand-computed row, the float64 backward against central
// finite differences of a scalar loss, float32 against float64, bfloat16 rounding of the
// outputs, and the row-split property the sequence-parallel layer relies on (dgamma and
// dbeta of the whole tensor are the sums of the shards').
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "collscope/layers/math/compare.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/layernorm.hpp"

namespace collscope::layers {
namespace {

Tensor random_tensor(std::size_t rows, std::size_t cols, std::string_view name, float scale = 1.0f,
                     DataType st = DataType::float32) {
  return make_full(11, {name, 0}, rows, cols, scale, st);
}

// gamma around 1, as a trained LayerNorm's weight.
Tensor random_gamma(std::size_t h, DataType st = DataType::float32) {
  Tensor g = random_tensor(1, h, "gamma", 0.5f, st);
  for (float& v : g.data) v += 1.0f;
  round_to_storage(g, st);
  return g;
}

// A scalar loss L = sum_ij w_ij y_ij of the float64 forward, w fixed: dL/dy = w.
double loss(const RefTensor& x, const RefTensor& gamma, const RefTensor& beta, const RefTensor& w) {
  const RefTensor y = ref_layernorm_forward(x, gamma, beta);
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += w.data[i] * y.data[i];
  return s;
}

// Central difference of `f` in element i of `t` (t is changed and put back).
double finite_difference(RefTensor& t, std::size_t i, const std::function<double()>& f) {
  const double h = 1e-6, saved = t.data[i];
  t.data[i] = saved + h;
  const double up = f();
  t.data[i] = saved - h;
  const double down = f();
  t.data[i] = saved;
  return (up - down) / (2 * h);
}

// x = [1, 2, 3, 4] (mean 2.5, var 1.25), gamma = [1, 2, 1, 1], beta = [0, 0, 1, 0]:
// xhat = [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25 + 1e-5).
TEST(LayerNorm, ForwardOfAHandComputedRow) {
  Tensor x(1, 4), gamma(1, 4), beta(1, 4);
  x.data = {1, 2, 3, 4};
  gamma.data = {1, 2, 1, 1};
  beta.data = {0, 0, 1, 0};
  LayerNormSaved saved;
  const Tensor y = layernorm_forward(x, gamma, beta, DataType::float32, saved);
  const double rstd = 1.0 / std::sqrt(1.25 + 1e-5);
  const double want[4] = {-1.5 * rstd, 2 * -0.5 * rstd, 0.5 * rstd + 1, 1.5 * rstd};
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(y.data[c], want[c], 1e-6) << c;
  EXPECT_FLOAT_EQ(saved.mean[0], 2.5f);
  EXPECT_NEAR(saved.rstd[0], rstd, 1e-6);
  const RefTensor ref = ref_layernorm_forward(to_ref(x), to_ref(gamma), to_ref(beta));
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(ref.data[c], want[c], 1e-14) << c;
}

// A constant row has var 0: xhat = 0 (eps keeps it finite), y = beta.
TEST(LayerNorm, ConstantRowGivesBeta) {
  Tensor x(1, 3), gamma(1, 3), beta(1, 3);
  x.data = {5, 5, 5};
  gamma.data = {2, 3, 4};
  beta.data = {0.25f, -1, 7};
  LayerNormSaved saved;
  const Tensor y = layernorm_forward(x, gamma, beta, DataType::float32, saved);
  EXPECT_EQ(y.data, beta.data);
}

// The float64 backward is the gradient of the float64 forward: dx, dgamma, dbeta against
// central differences of L = sum w * y.
TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  const std::size_t t = 5, h = 7;
  RefTensor x = to_ref(random_tensor(t, h, "x", 2.0f));
  RefTensor gamma = to_ref(random_gamma(h));
  RefTensor beta = to_ref(random_tensor(1, h, "beta", 0.5f));
  const RefTensor w = to_ref(random_tensor(t, h, "w"));
  const RefLayerNormGrads g = ref_layernorm_backward(x, gamma, w);
  const auto f = [&] { return loss(x, gamma, beta, w); };
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(g.dx.data[i], finite_difference(x, i, f), 1e-6) << "dx " << i;
  for (std::size_t j = 0; j < h; ++j) {
    EXPECT_NEAR(g.dgamma.data[j], finite_difference(gamma, j, f), 1e-6) << "dgamma " << j;
    EXPECT_NEAR(g.dbeta.data[j], finite_difference(beta, j, f), 1e-6) << "dbeta " << j;
  }
}

// Each row's dx sums to zero (LayerNorm removes the mean), and its product with xhat is
// what eps leaves: sum_j dx_j xhat_j = H eps rstd^3 mean_j(dy_j xhat_j) (gamma = 1), zero
// only as eps -> 0.
TEST(LayerNorm, InputGradientRemovesMeanAndScale) {
  const std::size_t t = 4, h = 9;
  const RefTensor x = to_ref(random_tensor(t, h, "x", 3.0f));
  const RefTensor dy = to_ref(random_tensor(t, h, "dy"));
  RefTensor gamma(1, h), zero(1, h);
  for (double& v : gamma.data) v = 1.0;
  const RefLayerNormGrads g = ref_layernorm_backward(x, gamma, dy);
  const RefTensor xhat = ref_layernorm_forward(x, gamma, zero);
  for (std::size_t r = 0; r < t; ++r) {
    double mean = 0, var = 0, s = 0, sx = 0, mean_gx = 0;
    for (std::size_t c = 0; c < h; ++c) mean += x.at(r, c) / h;
    for (std::size_t c = 0; c < h; ++c) var += (x.at(r, c) - mean) * (x.at(r, c) - mean) / h;
    const double rstd = 1 / std::sqrt(var + kLayerNormEps);
    for (std::size_t c = 0; c < h; ++c) {
      s += g.dx.at(r, c);
      sx += g.dx.at(r, c) * xhat.at(r, c);
      mean_gx += dy.at(r, c) * xhat.at(r, c) / h;
    }
    EXPECT_NEAR(s, 0.0, 1e-12) << r;
    const double want = h * kLayerNormEps * rstd * rstd * rstd * mean_gx;
    EXPECT_NEAR(sx, want, 1e-12) << r;
    EXPECT_GT(std::abs(want), 1e-9) << r;  // eps is visible at this precision
  }
}

// float32 forward and backward against float64 on the same (float32) inputs.
TEST(LayerNorm, Float32AgreesWithFloat64) {
  const std::size_t t = 33, h = 48;
  const Tensor x = random_tensor(t, h, "x", 4.0f), gamma = random_gamma(h);
  const Tensor beta = random_tensor(1, h, "beta", 0.5f), dy = random_tensor(t, h, "dy");
  LayerNormSaved saved;
  const Tensor y = layernorm_forward(x, gamma, beta, DataType::float32, saved);
  const LayerNormGrads g = layernorm_backward(x, gamma, saved, dy, DataType::float32);
  const RefTensor ry = ref_layernorm_forward(to_ref(x), to_ref(gamma), to_ref(beta));
  const RefLayerNormGrads rg = ref_layernorm_backward(to_ref(x), to_ref(gamma), to_ref(dy));
  const DataType f32 = DataType::float32;
  for (const ErrorStats& e : {compare(y, ry, f32, h), compare(g.dx, rg.dx, f32, h),
                              compare(g.dgamma, rg.dgamma, f32, t), compare(g.dbeta, rg.dbeta, f32, t)}) {
    EXPECT_TRUE(e.pass) << e.rel_l2_error << " vs " << e.tolerance;
    EXPECT_LT(e.rel_l2_error, 1e-6);
  }
}

// Under bfloat16 storage every output is a bfloat16 value, within bfloat16's tolerance.
TEST(LayerNorm, Bfloat16RoundsItsOutputs) {
  const std::size_t t = 6, h = 16;
  const DataType bf = DataType::bfloat16;
  const Tensor x = random_tensor(t, h, "x", 2.0f, bf), gamma = random_gamma(h, bf);
  const Tensor beta = random_tensor(1, h, "beta", 0.5f, bf), dy = random_tensor(t, h, "dy", 1.0f, bf);
  LayerNormSaved saved;
  const Tensor y = layernorm_forward(x, gamma, beta, bf, saved);
  const LayerNormGrads g = layernorm_backward(x, gamma, saved, dy, bf);
  for (const Tensor* out : {&y, &g.dx, &g.dgamma, &g.dbeta})
    for (float v : out->data) EXPECT_EQ(v, store_value(v, bf));
  const RefTensor ry = ref_layernorm_forward(to_ref(x), to_ref(gamma), to_ref(beta));
  const RefLayerNormGrads rg = ref_layernorm_backward(to_ref(x), to_ref(gamma), to_ref(dy));
  EXPECT_TRUE(compare(y, ry, bf, h).pass);
  EXPECT_TRUE(compare(g.dx, rg.dx, bf, h).pass);
  EXPECT_TRUE(compare(g.dgamma, rg.dgamma, bf, t).pass);
}

// Rows are independent: the shards' dx are the rows of the whole dx, and the shards'
// dgamma, dbeta add up to the whole tensor's (why the SP layer allreduces them over TP).
TEST(LayerNorm, RowShardsGivePartialWeightGradients) {
  const std::size_t t = 8, h = 5;
  const RefTensor x = to_ref(random_tensor(t, h, "x", 2.0f)), gamma = to_ref(random_gamma(h));
  const RefTensor dy = to_ref(random_tensor(t, h, "dy"));
  const RefLayerNormGrads whole = ref_layernorm_backward(x, gamma, dy);
  const RefLayerNormGrads a = ref_layernorm_backward(row_block(x, 0, 3), gamma, row_block(dy, 0, 3));
  const RefLayerNormGrads b = ref_layernorm_backward(row_block(x, 3, 5), gamma, row_block(dy, 3, 5));
  for (std::size_t j = 0; j < h; ++j) {
    EXPECT_NEAR(a.dgamma.data[j] + b.dgamma.data[j], whole.dgamma.data[j], 1e-12);
    EXPECT_NEAR(a.dbeta.data[j] + b.dbeta.data[j], whole.dbeta.data[j], 1e-12);
  }
  const RefTensor joined = concat_rows(std::vector<RefTensor>{a.dx, b.dx});
  for (std::size_t i = 0; i < joined.size(); ++i) EXPECT_NEAR(joined.data[i], whole.dx.data[i], 1e-12);
}

TEST(LayerNorm, RejectsMismatchedShapes) {
  Tensor x(2, 4), gamma(1, 3), beta(1, 4);
  LayerNormSaved saved;
  EXPECT_THROW(layernorm_forward(x, gamma, beta, DataType::float32, saved), std::logic_error);
}

}  // namespace
}  // namespace collscope::layers
