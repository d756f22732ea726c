// A sample's median, minimum and maximum (the median of an even count is the mean of the
// middle two; an empty sample gives zeros): what every table reports of per-iteration
// times (benchmark rows, pingpong pairs, layer records).
#pragma once

#include <vector>

namespace collscope::program {

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats_of(std::vector<double> v);

}  // namespace collscope::program
