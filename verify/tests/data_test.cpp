#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "collscope/reducer.hpp"
#include "collscope/verify/data.hpp"

using namespace collscope;
using namespace collscope::verify;

TEST(Data, DeterministicAndRankDependent) {
  DataSpec s{7, DataType::float32, ReduceOp::sum, 4};
  EXPECT_EQ(input_value(s, 1, 10), input_value(s, 1, 10));
  int differ = 0;
  for (std::size_t i = 0; i < 100; ++i) differ += input_value(s, 0, i) != input_value(s, 1, i);
  EXPECT_GT(differ, 50);
}

TEST(Data, SumRangeKeepsPartialSumsExact) {
  for (int n : {1, 2, 8, 256}) {
    DataSpec s{3, DataType::bfloat16, ReduceOp::sum, n};
    for (std::size_t i = 0; i < 200; ++i)
      for (int r = 0; r < n; ++r) EXPECT_LE(std::abs(input_value(s, r, i)) * n, 256);
  }
}

TEST(Data, FloatProdHasExactlyOneTwoPerIndex) {
  DataSpec s{3, DataType::float16, ReduceOp::prod, 5};
  for (std::size_t i = 0; i < 50; ++i) {
    int twos = 0;
    for (int r = 0; r < 5; ++r) {
      const auto v = input_value(s, r, i);
      EXPECT_TRUE(v == 1 || v == -1 || v == 2 || v == -2);
      twos += std::abs(v) == 2;
    }
    EXPECT_EQ(twos, 1);
  }
}

TEST(Data, ExpectedMatchesHandReduction) {
  for (DataType t : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps) {
      if (!op_valid_for(op, t)) continue;
      DataSpec s{11, t, op, 3};
      const std::size_t n = 64, es = dtype_size(t);
      std::vector<std::byte> a(n * es), b(n * es), c(n * es), want(n * es), got(n * es);
      fill_input(a.data(), n, s, 0);
      fill_input(b.data(), n, s, 1);
      fill_input(c.data(), n, s, 2);
      // The host reducer gives the same answer in any order: (c op a) op b.
      const auto& red = host_reducer();
      red.reduce(got.data(), c.data(), a.data(), n, t, op);
      red.reduce(got.data(), got.data(), b.data(), n, t, op);
      if (op == ReduceOp::avg) red.divide(got.data(), n, t, 3);
      fill_allreduce_expected(want.data(), n, s);
      const Mismatch m = compare(got.data(), want.data(), n, t);
      EXPECT_EQ(m.wrong, 0u) << dtype_name(t) << " " << op_name(op) << " first bad "
                             << m.first_index << " got " << m.got << " want " << m.want;
    }
}

TEST(Data, CompareCountsAndLocatesMismatches) {
  std::vector<float> got(10, 1.0f), want(10, 1.0f);
  got[3] = 2.0f;
  got[7] = std::numeric_limits<float>::quiet_NaN();
  want[7] = std::numeric_limits<float>::quiet_NaN();  // NaN never matches, even NaN
  const Mismatch m = compare(got.data(), want.data(), 10, DataType::float32);
  EXPECT_EQ(m.wrong, 2u);
  EXPECT_EQ(m.first_index, 3);
  EXPECT_EQ(m.got, 2.0);
  EXPECT_EQ(m.want, 1.0);
}
