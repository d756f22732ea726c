// Local math against its float64 reference, bfloat16 storage rounding, deterministic
// data, and the comparator (it must catch a wrong tensor and NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "collscope/half.hpp"
#include "collscope/layers/math/compare.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
namespace {

Tensor random_tensor(std::size_t rows, std::size_t cols, std::string_view name,
                     DataType st = DataType::float32) {
  return make_full(7, {name, 0}, rows, cols, 1.0f, st);
}

Tensor to_float(const RefTensor& r) {
  Tensor t(r.rows, r.cols);
  for (std::size_t i = 0; i < r.size(); ++i) t.data[i] = static_cast<float>(r.data[i]);
  return t;
}

class MathTest : public ::testing::Test {
 protected:
  void SetUp() override { use_one_blas_thread(); }
};

// Every combination of transposes, odd shapes: C = op(A) op(B) within float32 rounding.
TEST_F(MathTest, MatmulMatchesReferenceForEveryTranspose) {
  const std::size_t m = 7, k = 13, n = 5;
  for (Trans ta : {Trans::no, Trans::yes})
    for (Trans tb : {Trans::no, Trans::yes}) {
      const Tensor a = ta == Trans::no ? random_tensor(m, k, "A") : random_tensor(k, m, "A");
      const Tensor b = tb == Trans::no ? random_tensor(k, n, "B") : random_tensor(n, k, "B");
      const Tensor c = matmul(a, ta, b, tb, DataType::float32);
      const RefTensor ref = ref_matmul(to_ref(a), ta, to_ref(b), tb);
      ASSERT_EQ(c.rows, m);
      ASSERT_EQ(c.cols, n);
      const ErrorStats e = compare(c, ref, DataType::float32, k);
      EXPECT_TRUE(e.pass) << "rel " << e.rel_l2_error;
      EXPECT_LT(e.rel_l2_error, 1e-6);
    }
}

TEST_F(MathTest, MatmulOfKnownValues) {
  Tensor a(2, 3), b(3, 2);
  a.data = {1, 2, 3, 4, 5, 6};
  b.data = {7, 8, 9, 10, 11, 12};
  const Tensor c = matmul(a, Trans::no, b, Trans::no, DataType::float32);
  EXPECT_EQ(c.data, (std::vector<float>{58, 64, 139, 154}));
  EXPECT_THROW(matmul(a, Trans::no, a, Trans::no, DataType::float32), std::logic_error);
}

// Under bfloat16 storage the GEMM's result is rounded once: exactly the float32 result
// rounded to bfloat16.
TEST_F(MathTest, MatmulRoundsItsResultToBfloat16) {
  const Tensor a = random_tensor(4, 9, "A", DataType::bfloat16);
  const Tensor b = random_tensor(9, 3, "B", DataType::bfloat16);
  const Tensor f32 = matmul(a, Trans::no, b, Trans::no, DataType::float32);
  const Tensor bf16 = matmul(a, Trans::no, b, Trans::no, DataType::bfloat16);
  for (std::size_t i = 0; i < f32.size(); ++i)
    EXPECT_EQ(bf16.data[i], to_float(to_bfloat16(f32.data[i])));
}

TEST_F(MathTest, GeluValuesAndDerivative) {
  EXPECT_EQ(gelu(0.0), 0.0);
  EXPECT_NEAR(gelu(1.0), 0.8413447460685429, 1e-15);    // 1 x Phi(1)
  EXPECT_NEAR(gelu(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(gelu(3.0f), 2.9959502f, 1e-6f);
  for (double x : {-3.0, -1.0, -0.2, 0.0, 0.5, 2.0}) {
    const double h = 1e-6, numeric = (gelu(x + h) - gelu(x - h)) / (2 * h);
    EXPECT_NEAR(gelu_grad(x), numeric, 1e-8) << "x = " << x;
    EXPECT_NEAR(gelu_grad(static_cast<float>(x)), gelu_grad(x), 1e-6) << "x = " << x;
  }
}

TEST_F(MathTest, GeluBackwardIsTheChainRule) {
  const Tensor z = random_tensor(3, 4, "Z"), da = random_tensor(3, 4, "dA");
  const Tensor dz = gelu_backward(da, z, DataType::float32);
  const RefTensor ref = ref_gelu_backward(to_ref(da), to_ref(z));
  EXPECT_TRUE(compare(dz, ref, DataType::float32, 1).pass);
  EXPECT_TRUE(compare(gelu(z, DataType::float32), ref_gelu(to_ref(z)), DataType::float32, 1).pass);
}

TEST(Storage, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(store_value(1.0f + 0x1p-8f, DataType::bfloat16), 1.0f);  // tie: to even
  EXPECT_EQ(store_value(1.0f + 0x1p-7f + 0x1p-8f, DataType::bfloat16), 1.0f + 0x1p-6f);
  EXPECT_EQ(store_value(1.0f + 0x1p-9f, DataType::bfloat16), 1.0f);
  EXPECT_EQ(store_value(1.0f + 0x1p-7f, DataType::bfloat16), 1.0f + 0x1p-7f);  // exact
  EXPECT_EQ(store_value(1.0f + 0x1p-9f, DataType::float32), 1.0f + 0x1p-9f);
  EXPECT_TRUE(std::isnan(store_value(std::numeric_limits<float>::quiet_NaN(), DataType::bfloat16)));
  Tensor t(1, 2);
  t.data = {0.1f, -3.14159f};
  round_to_storage(t, DataType::bfloat16);
  EXPECT_EQ(t.data[0], 0.10009765625f);
  EXPECT_EQ(t.data[1], -3.140625f);
}

// A rank's shard is exactly the block of the full tensor, and the data depend on the
// seed, the tensor's name and its replica.
TEST(Data, ShardsAreBlocksOfTheWholeTensor) {
  const Tensor full = make_full(3, {"W1", 0}, 6, 8, 0.5f, DataType::bfloat16);
  const Tensor shard = make_block(3, {"W1", 0}, {8, 2, 3, 4, 4}, 0.5f, DataType::bfloat16);
  EXPECT_EQ(shard.data, column_block(row_block(full, 2, 3), 4, 4).data);
  for (float v : full.data) EXPECT_LE(std::abs(v), 0.5f);
  EXPECT_NE(full.data, make_full(4, {"W1", 0}, 6, 8, 0.5f, DataType::bfloat16).data);
  EXPECT_NE(full.data, make_full(3, {"W2", 0}, 6, 8, 0.5f, DataType::bfloat16).data);
  EXPECT_NE(full.data, make_full(3, {"W1", 1}, 6, 8, 0.5f, DataType::bfloat16).data);
}

TEST(Data, ConcatUndoesBlocks) {
  const Tensor full = make_full(1, {"X", 0}, 5, 6, 1.0f, DataType::float32);
  EXPECT_EQ(concat_columns(std::vector<Tensor>{column_block(full, 0, 2), column_block(full, 2, 4)}).data,
            full.data);
  EXPECT_EQ(concat_rows(std::vector<Tensor>{row_block(full, 0, 1), row_block(full, 1, 4)}).data,
            full.data);
}

TEST(Compare, ExactResultPasses) {
  const Tensor t = random_tensor(8, 8, "T");
  const ErrorStats e = compare(t, to_ref(t), DataType::float32, 64);
  EXPECT_TRUE(e.pass);
  EXPECT_EQ(e.rel_l2_error, 0);
  EXPECT_EQ(e.max_abs_error, 0);
  EXPECT_DOUBLE_EQ(e.tolerance, 1e-5);
}

TEST(Compare, OneWrongElementFails) {
  const Tensor t = random_tensor(8, 8, "T");
  Tensor wrong = t;
  wrong.data[17] += 1.0f;
  for (DataType st : {DataType::float32, DataType::bfloat16}) {
    const ErrorStats e = compare(wrong, to_ref(t), st, 64);
    EXPECT_FALSE(e.pass) << dtype_name(st);
    EXPECT_NEAR(e.max_abs_error, 1.0, 1e-6);
  }
}

TEST(Compare, SmallErrorWithinToleranceOnlyForItsDtype) {
  const Tensor t = random_tensor(16, 16, "T");
  Tensor off = t;
  for (float& v : off.data) v *= 1.0f + 1e-3f;  // rel L2 error 1e-3
  EXPECT_FALSE(compare(off, to_ref(t), DataType::float32, 64).pass);
  EXPECT_TRUE(compare(off, to_ref(t), DataType::bfloat16, 64).pass);
}

TEST(Compare, NanNeverPasses) {
  const Tensor t = random_tensor(4, 4, "T");
  for (std::size_t at : {std::size_t{0}, std::size_t{15}}) {
    Tensor bad = t;
    bad.data[at] = std::numeric_limits<float>::quiet_NaN();
    const ErrorStats e = compare(bad, to_ref(t), DataType::bfloat16, 1 << 20);
    EXPECT_FALSE(e.pass);
    EXPECT_FALSE(e.finite);
    EXPECT_TRUE(std::isnan(e.max_abs_error));
    EXPECT_FALSE(worst_of(compare(t, to_ref(t), DataType::bfloat16, 1), e).pass);
  }
  Tensor inf = t;
  inf.data[3] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(compare(inf, to_ref(t), DataType::bfloat16, 1 << 20).pass);
}

TEST(Compare, ShapeMismatchFails) {
  const Tensor t = random_tensor(4, 4, "T");
  EXPECT_FALSE(compare(random_tensor(2, 8, "T"), to_ref(t), DataType::float32, 4).pass);
}

TEST(Compare, ToleranceGrowsWithTheReductionLength) {
  EXPECT_DOUBLE_EQ(tolerance_for(DataType::float32, 16), 1e-5);
  EXPECT_DOUBLE_EQ(tolerance_for(DataType::float32, 6400), 1e-4);
  EXPECT_DOUBLE_EQ(tolerance_for(DataType::bfloat16, 64), 0.015625);
  EXPECT_DOUBLE_EQ(tolerance_for(DataType::bfloat16, 256), 0.03125);
}

// Attention of one head: probabilities are a softmax (rows sum to 1, causal rows put
// nothing on later keys), O = P V, and the float32 form matches the float64 one.
TEST_F(MathTest, AttentionHeadIsASoftmaxOfScaledScores) {
  const std::size_t s = 6, d = 4;
  const Tensor q = random_tensor(s, d, "Q"), k = random_tensor(s, d, "K"), v = random_tensor(s, d, "V");
  for (bool causal : {false, true}) {
    const RefAttentionOut r = ref_attention_head(to_ref(q), to_ref(k), to_ref(v), causal);
    for (std::size_t i = 0; i < s; ++i) {
      double sum = 0, num = 0, den = 0;
      for (std::size_t j = 0; j < s; ++j) {
        sum += r.p.at(i, j);
        if (causal && j > i) {
          EXPECT_EQ(r.p.at(i, j), 0.0);
        }
      }
      EXPECT_NEAR(sum, 1.0, 1e-12);
      // p(i,0) / p(i,i) = exp((q_i.k_0 - q_i.k_i) / sqrt d), written out again
      for (std::size_t c = 0; c < d; ++c) {
        num += double(q.at(i, c)) * k.at(0, c);
        den += double(q.at(i, c)) * k.at(i, c);
      }
      EXPECT_NEAR(r.p.at(i, 0) / r.p.at(i, i), std::exp((num - den) / std::sqrt(double(d))), 1e-12);
    }
    const AttentionOut f = attention_head(q, k, v, causal, DataType::float32);
    EXPECT_TRUE(compare(f.o, r.o, DataType::float32, s).pass);
    EXPECT_TRUE(compare(f.p, r.p, DataType::float32, d).pass);
  }
}

// The attention backward against central finite differences of L = sum(dO * O).
TEST_F(MathTest, AttentionBackwardMatchesFiniteDifferences) {
  const std::size_t s = 5, d = 3;
  const RefTensor q = to_ref(random_tensor(s, d, "Q")), k = to_ref(random_tensor(s, d, "K")),
                  v = to_ref(random_tensor(s, d, "V")), dout = to_ref(random_tensor(s, d, "dO"));
  for (bool causal : {false, true}) {
    const RefAttentionOut out = ref_attention_head(q, k, v, causal);
    const RefAttentionGrads g = ref_attention_head_backward(q, k, v, out.p, dout);
    auto loss = [&](const RefTensor& qq, const RefTensor& kk, const RefTensor& vv) {
      const RefTensor o = ref_attention_head(qq, kk, vv, causal).o;
      double l = 0;
      for (std::size_t i = 0; i < o.size(); ++i) l += o.data[i] * dout.data[i];
      return l;
    };
    const double h = 1e-6;
    for (int which = 0; which < 3; ++which)
      for (std::size_t i = 0; i < s * d; ++i) {
        RefTensor a[3] = {q, k, v}, b[3] = {q, k, v};
        a[which].data[i] += h;
        b[which].data[i] -= h;
        const double fd = (loss(a[0], a[1], a[2]) - loss(b[0], b[1], b[2])) / (2 * h);
        const RefTensor& got = which == 0 ? g.dq : which == 1 ? g.dk : g.dv;
        EXPECT_NEAR(got.data[i], fd, 1e-7) << "tensor " << which << " element " << i
                                           << " causal " << causal;
      }
    const AttentionGrads f =
        attention_head_backward(to_float(q), to_float(k), to_float(v), to_float(out.p),
                                to_float(dout), DataType::float32);
    EXPECT_TRUE(compare(f.dq, g.dq, DataType::float32, s).pass);
    EXPECT_TRUE(compare(f.dk, g.dk, DataType::float32, s).pass);
  }
}

}  // namespace
}  // namespace collscope::layers
