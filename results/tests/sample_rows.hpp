// Rows for the tests: every shape a row takes (vendor nulls, all-to-all-v splits, a cost
// model or none, unchecked runs, pingpong of one pair and of all pairs), made from an index.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace collscope::results::testing {

// A collective row as bench::to_json(Measurement) makes it; "bytes" is 1000 + i.
nlohmann::json sample_collective(std::int64_t i);
// A pingpong row as bench/pingpong/record.cpp's to_json makes it; "bytes" is 1000 + i.
nlohmann::json sample_pingpong(std::int64_t i);
// A layer record as collscope::layers::to_json makes it (layers/framework/record.cpp); "seed"
// is 1000 + i. Some with nothing measured (vendor), no checks, no times, NaN errors.
nlohmann::json sample_layer(std::int64_t i);
// Which sample a stored row is (from "bytes"), -1 if none.
std::int64_t sample_index(const nlohmann::json& row);
// Which layer sample a stored row is (from "seed").
std::int64_t sample_layer_index(const nlohmann::json& row);

}  // namespace collscope::results::testing
