// Costs as functions of size (MODEL.md, "Costs by size"): a curve known at a few sizes is
// linear in the size between two of them and proportional to the size beyond the ends,
// so a one-band curve is a constant rate, and the cost never jumps at a band's edge.
// Within a call, a piece of a larger footprint costs at least the footprint's per-byte
// rate (MODEL.md, "The call's footprint").
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

double SizeCurve::seconds_within(double size, double footprint) const {
  const double alone = seconds_for(size);
  if (!(footprint > size)) return alone;
  return std::max(alone, size * seconds_for(footprint) / footprint);
}

double LinkParams::port_seconds(double bytes, bool opposite_busy, double footprint,
                                bool from_input) const {
  const SizeCurve& one = from_input && !one_way_input.empty() ? one_way_input : one_way;
  const SizeCurve& both = from_input && !both_ways_input.empty() ? both_ways_input : both_ways;
  if (opposite_busy && !both.empty()) return both.seconds_within(bytes, footprint);
  if (!one.empty()) return one.seconds_within(bytes, footprint);
  return bytes / achieved_bandwidth();
}

double Model::reduce_seconds(double bytes, double footprint) const {
  if (reduce_curve.empty()) return bytes / reduce_rate;
  return reduce_curve.seconds_within(bytes, footprint);
}

double Model::copy_seconds(double bytes, double footprint) const {
  if (!copy_curve.empty()) return copy_curve.seconds_within(bytes, footprint);
  return copy_rate > 0 ? bytes / copy_rate : 0;
}

}  // namespace collscope
