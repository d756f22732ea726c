// The all-to-all-v pairwise theory and the part offsets, checked without any
// communication on split matrices with empty parts, a skewed row and a skewed column.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/collective.hpp"
#include "collscope/theory.hpp"
#include "collscope/vendor_mpi.hpp"

namespace collscope {
namespace {

// A deterministic matrix: zeros on some parts, the row of rank 1 and the column of rank
// 0 heavy.
std::vector<std::uint64_t> skewed_splits(int n) {
  std::vector<std::uint64_t> s;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      std::uint64_t v = static_cast<std::uint64_t>((i * 7 + j * 3) % 5);
      if (i == 1) v += 40;
      if (j == 0) v += 25;
      s.push_back(v);
    }
  return s;
}

CollArgs args_with(const std::vector<std::uint64_t>& splits, DataType t) {
  CollArgs a;
  a.splits = splits;
  a.dtype = t;
  return a;
}

TEST(AlltoallvTheory, RowOutColumnInDiagonalAsideOneMessagePerNonEmptyPart) {
  for (int n = 1; n <= 9; ++n) {
    const std::vector<std::uint64_t> splits = skewed_splits(n);
    const CollArgs a = args_with(splits, DataType::int32);
    RankVolume total;
    for (int r = 0; r < n; ++r) {
      RankVolume want;
      for (int p = 0; p < n; ++p) {
        if (p == r) continue;
        const std::uint64_t out = split_at(a, r, p, n), in = split_at(a, p, r, n);
        want.sent_bytes += out * 4;
        want.sent_msgs += out > 0;
        want.recv_bytes += in * 4;
        want.recv_msgs += in > 0;
      }
      const RankVolume got = theory_total(theory::alltoallv_pairwise, r, n, a);
      EXPECT_EQ(got, want) << n << " " << r;
      total += got;
    }
    EXPECT_EQ(total.sent_bytes, total.recv_bytes);
    EXPECT_EQ(total.sent_msgs, total.recv_msgs);
  }
}

TEST(AlltoallvTheory, AllZeroMatrixMovesNothing) {
  const std::vector<std::uint64_t> zeros(16, 0);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(theory_total(theory::alltoallv_pairwise, r, 4, args_with(zeros, DataType::float32)), RankVolume{});
}

TEST(AlltoallvSplits, OffsetsPackTheRowAndTheColumn) {
  const int n = 5;
  const std::vector<std::uint64_t> splits = skewed_splits(n);
  const CollArgs a = args_with(splits, DataType::float64);
  for (int r = 0; r < n; ++r) {  // offsets are the running sums of the row and the column
    std::uint64_t row = 0, column = 0;
    for (int p = 0; p < n; ++p) {
      EXPECT_EQ(split_send_offset(a, r, p, n), row);
      EXPECT_EQ(split_recv_offset(a, p, r, n), column);
      row += splits[static_cast<std::size_t>(r * n + p)];
      column += splits[static_cast<std::size_t>(p * n + r)];
    }
    EXPECT_EQ(split_row_sum(a, r, n), row);
    EXPECT_EQ(split_col_sum(a, r, n), column);
  }
  EXPECT_FALSE(split_matrix_problem(n, a).has_value());
  EXPECT_TRUE(split_matrix_problem(n + 1, a).has_value());
}

TEST(AlltoallvConstraint, MpiNeedsIntCountsAndDisplacements) {
  std::vector<std::uint64_t> splits = {1, 2, 3, 4};
  EXPECT_FALSE(vendor::mpi_alltoallv_limits(2, args_with(splits, DataType::int8)).has_value());
  splits[1] = std::uint64_t{1} << 31;  // a part above INT_MAX
  EXPECT_TRUE(vendor::mpi_alltoallv_limits(2, args_with(splits, DataType::int8)).has_value());
  splits = {std::uint64_t{1} << 30, std::uint64_t{1} << 30, 0, 1};  // offset 2^30 fits
  EXPECT_FALSE(vendor::mpi_alltoallv_limits(2, args_with(splits, DataType::int8)).has_value());
  splits = {std::uint64_t{1} << 30, 0, std::uint64_t{1} << 30, 5};  // column 0 sums to 2^31
  EXPECT_FALSE(vendor::mpi_alltoallv_limits(2, args_with(splits, DataType::int8)).has_value());
  splits = {3, (std::uint64_t{1} << 31) - 2, 0, 0};
  EXPECT_FALSE(vendor::mpi_alltoallv_limits(2, args_with(splits, DataType::int8)).has_value());
  EXPECT_TRUE(call_problem(*find_algorithm(Collective::alltoallv, "pairwise"), 3, args_with(splits, DataType::int8), false).has_value());
  splits = {std::uint64_t{INT_MAX}, 1, 1, 0, 0, 0, 0, 0, 0};  // third offset is 2^31
  EXPECT_TRUE(vendor::mpi_alltoallv_limits(3, args_with(splits, DataType::int8)).has_value());
}

}  // namespace
}  // namespace collscope
