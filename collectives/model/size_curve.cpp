// Costs as functions of size (MODEL.md, "Costs by size"): a curve known at a few sizes is
// linear in the size between two of them and proportional to the size beyond the ends,
// so a one-band curve is a constant rate, and the cost never jumps at a band's edge.
#include <algorithm>

#include "collscope/model.hpp"

namespace collscope {

double SizeCurve::seconds_for(double size) const {
  if (bytes.empty() || size <= 0) return 0;
  if (size <= bytes.front()) return seconds.front() * size / bytes.front();
  if (size >= bytes.back()) return seconds.back() * size / bytes.back();
  const auto hi = static_cast<std::size_t>(
      std::upper_bound(bytes.begin(), bytes.end(), size) - bytes.begin());
  const std::size_t lo = hi - 1;
  const double share = (size - bytes[lo]) / (bytes[hi] - bytes[lo]);
  return seconds[lo] + share * (seconds[hi] - seconds[lo]);
}

double LinkParams::port_seconds(double bytes, bool opposite_busy) const {
  if (opposite_busy && !both_ways.empty()) return both_ways.seconds_for(bytes);
  if (!one_way.empty()) return one_way.seconds_for(bytes);
  return bytes / achieved_bandwidth();
}

double Model::reduce_seconds(double bytes) const {
  return reduce_curve.empty() ? bytes / reduce_rate : reduce_curve.seconds_for(bytes);
}

double Model::copy_seconds(double bytes) const {
  if (!copy_curve.empty()) return copy_curve.seconds_for(bytes);
  return copy_rate > 0 ? bytes / copy_rate : 0;
}

}  // namespace collscope
