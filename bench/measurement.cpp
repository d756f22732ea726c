#include "collscope/bench/measurement.hpp"

#include <algorithm>

#include "collscope/program/stats.hpp"

namespace collscope::bench {

void Measurement::summarise(double busbw_factor) {
  if (times_us.empty()) return;
  const program::Stats t = program::stats_of(times_us);
  time_us = t.median;
  time_us_min = t.min;
  time_us_max = t.max;
  time_us_p25 = t.p25;
  time_us_p75 = t.p75;
  time_spread = t.spread;
  noisy = program::is_noisy(t.spread, noise_threshold);
  // GB/s with GB = 1e9 bytes: bytes / (us * 1e3).
  algbw_gbps = time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e3) : 0;
  busbw_gbps = algbw_gbps * busbw_factor;
}

int Measurement::busiest_rank() const {
  const std::vector<RankVolume>& v = measured.empty() ? theory : measured;
  if (v.empty()) return -1;
  auto it = std::max_element(v.begin(), v.end(), [](const RankVolume& a, const RankVolume& b) {
    return a.sent_bytes < b.sent_bytes;
  });
  return static_cast<int>(it - v.begin());
}

}  // namespace collscope::bench
