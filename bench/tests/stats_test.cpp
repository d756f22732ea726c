// The statistics every row reports (program/stats.hpp) and the planted slowdown
// (program/faults.hpp): quartiles as numpy.percentile computes them, the spread only
// from enough samples, the noisy verdict against its threshold, the hook's checks.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "collscope/errors.hpp"
#include "collscope/program/faults.hpp"
#include "collscope/program/stats.hpp"
#include "collscope/program/text.hpp"

namespace collscope::program {
namespace {

TEST(Stats, QuartilesInterpolateAsNumpyDoes) {
  // numpy.percentile([1, 2, 3, 4, 10], [25, 50, 75]) == [2, 3, 4]
  const Stats a = stats_of({10, 2, 4, 1, 3});
  EXPECT_DOUBLE_EQ(a.p25, 2);
  EXPECT_DOUBLE_EQ(a.median, 3);
  EXPECT_DOUBLE_EQ(a.p75, 4);
  EXPECT_DOUBLE_EQ(a.min, 1);
  EXPECT_DOUBLE_EQ(a.max, 10);
  EXPECT_DOUBLE_EQ(a.spread, (4.0 - 2.0) / 3.0);
  // numpy.percentile([1, 2, 3, 4, 5, 6], [25, 50, 75]) == [2.25, 3.5, 4.75]
  const Stats b = stats_of({6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(b.p25, 2.25);
  EXPECT_DOUBLE_EQ(b.median, 3.5);
  EXPECT_DOUBLE_EQ(b.p75, 4.75);
}

TEST(Stats, TheSpreadNeedsFiveSamplesAndAPositiveMedian) {
  EXPECT_TRUE(std::isnan(stats_of({1, 2, 3, 4}).spread));
  EXPECT_TRUE(std::isnan(stats_of({0, 0, 0, 0, 0}).spread));
  EXPECT_FALSE(std::isnan(stats_of({1, 1, 1, 1, 1}).spread));
  EXPECT_DOUBLE_EQ(stats_of({1, 1, 1, 1, 1}).spread, 0);
  const Stats empty = stats_of({});
  EXPECT_EQ(empty.median, 0);
  EXPECT_TRUE(std::isnan(empty.spread));
}

TEST(Stats, NoisyOnlyAboveAKnownThreshold) {
  EXPECT_TRUE(is_noisy(0.25, 0.2));
  EXPECT_FALSE(is_noisy(0.2, 0.2));
  EXPECT_FALSE(is_noisy(std::nan(""), 0.2));
  EXPECT_EQ(spread_text(0.31, true), "31%!");
  EXPECT_EQ(spread_text(0.07, false), "7%");
  EXPECT_EQ(spread_text(std::nan(""), false), "-");
}

TEST(Faults, TheSlowdownFactorIsCheckedAndStretchesTime) {
  unsetenv("COLLSCOPE_DEBUG_SLOWDOWN");
  EXPECT_EQ(slowdown_factor(), 1);
  setenv("COLLSCOPE_DEBUG_SLOWDOWN", "1.5", 1);
  EXPECT_EQ(slowdown_factor(), 1.5);
  for (const char* bad : {"0.5", "fast", "1.5x", "2000"}) {
    setenv("COLLSCOPE_DEBUG_SLOWDOWN", bad, 1);
    EXPECT_THROW(slowdown_factor(), UsageError) << bad;
  }
  unsetenv("COLLSCOPE_DEBUG_SLOWDOWN");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  while (clock::now() - t0 < std::chrono::milliseconds(20)) {
  }
  stretch_since(t0, 2.0);
  const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  EXPECT_GE(ms, 40.0);  // at least twice what had passed; no upper bound (a loaded machine)
}

}  // namespace
}  // namespace collscope::program
