// Deterministic layer data: element (r, c) of a full, unsharded tensor is a function of
// (seed, tensor id, r * cols + c) only, so every rank generates its own shard where it
// lives and the verifier can tell what any element must be.
//
// Values are uniform in [-scale, scale) (a splitmix64 hash mapped to 24 random bits),
// then rounded to the storage dtype. Weights use scale = 1 / sqrt(fan_in), so every
// activation stays of order one whatever the shapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

// A tensor's identity: its name and a replica index (the DP rank whose micro-batch it
// is; 0 for weights, which every replica shares).
struct TensorId {
  std::string_view name;
  int replica = 0;
};

float data_value(std::uint64_t seed, TensorId id, std::size_t global_index, float scale);

// Rows [row0, row0 + rows) x columns [col0, col0 + cols) of the full tensor with
// `full_cols` columns.
struct BlockSpec {
  std::size_t full_cols = 0;
  std::size_t row0 = 0, rows = 0;
  std::size_t col0 = 0, cols = 0;
};

Tensor make_block(std::uint64_t seed, TensorId id, const BlockSpec& b, float scale,
                  DataType storage);
// The whole rows x cols tensor.
Tensor make_full(std::uint64_t seed, TensorId id, std::size_t rows, std::size_t cols, float scale,
                 DataType storage);

// A weight's scale, 1 / sqrt(fan_in): activations stay of order one whatever the shapes.
float weight_scale(std::size_t fan_in);

}  // namespace collscope::layers
