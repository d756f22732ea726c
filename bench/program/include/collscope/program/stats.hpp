// What every table reports of a sample of per-iteration times (benchmark rows, pingpong
// pairs, layer records): its median, minimum and maximum, its quartiles and its relative
// spread, and whether that spread makes the row noisy. The median of an even count is the
// mean of the middle two; the quartiles interpolate linearly between order statistics (as
// numpy.percentile does by default); an empty sample gives zeros.
#pragma once

#include <limits>
#include <vector>

namespace collscope::program {

// Fewer samples than this say nothing about their spread: time_spread is then unknown (NaN).
inline constexpr std::size_t kMinSamplesForSpread = 5;
// A row is noisy when its interquartile range exceeds this share of its median (--noise-threshold).
inline constexpr double kDefaultNoiseThreshold = 0.2;

struct Stats {
  double median = 0, min = 0, max = 0;
  double p25 = 0, p75 = 0;
  // (p75 - p25) / median: the relative interquartile range; NaN with fewer than
  // kMinSamplesForSpread samples or a zero median.
  double spread = std::numeric_limits<double>::quiet_NaN();
};

Stats stats_of(std::vector<double> v);

// Whether a spread marks its row as noisy: known and above the threshold.
bool is_noisy(double spread, double threshold);

}  // namespace collscope::program
