#include "collscope/program/stats.hpp"

#include <algorithm>
#include <cmath>

namespace collscope::program {
namespace {

// The q-quantile of a sorted sample: linear between the order statistics around (n-1) q.
double quantile(const std::vector<double>& sorted, double q) {
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Stats stats_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  Stats s;
  s.median = quantile(v, 0.5);
  s.min = v.front();
  s.max = v.back();
  s.p25 = quantile(v, 0.25);
  s.p75 = quantile(v, 0.75);
  if (v.size() >= kMinSamplesForSpread && s.median > 0) s.spread = (s.p75 - s.p25) / s.median;
  return s;
}

bool is_noisy(double spread, double threshold) { return !std::isnan(spread) && spread > threshold; }

}  // namespace collscope::program
