// The fields every timed row's JSON record carries about its iteration times' spread,
// its sweep round and its GPUs' sharing (results/SCHEMA.md, version 5): written once for
// pingpong and the layer records (the collective rows keep them in bench::Measurement).
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include "collscope/program/stats.hpp"

namespace collscope::program {

// time_us_p25, time_us_p75, time_spread (null when unknown), noise_threshold, noisy,
// round and gpu_sharing ("" on host memory). Json: nlohmann::json or ordered_json.
template <class Json>
void add_spread_fields(Json& row, const Stats& times, double noise_threshold, int round,
                       std::string_view gpu_sharing) {
  row["time_us_p25"] = times.p25;
  row["time_us_p75"] = times.p75;
  row["time_spread"] = std::isnan(times.spread) ? Json(nullptr) : Json(times.spread);
  row["noise_threshold"] = noise_threshold;
  row["noisy"] = is_noisy(times.spread, noise_threshold);
  row["round"] = round;
  row["gpu_sharing"] = std::string(gpu_sharing);
}

}  // namespace collscope::program
