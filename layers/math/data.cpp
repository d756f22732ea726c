#include "collscope/layers/math/data.hpp"

#include <cmath>

#include "collscope/splitmix.hpp"

namespace collscope::layers {
namespace {

// FNV-1a: stable across runs and builds (std::hash is not guaranteed to be).
std::uint64_t name_hash(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

float data_value(std::uint64_t seed, TensorId id, std::size_t global_index, float scale) {
  const std::uint64_t tensor =
      splitmix64(name_hash(id.name) ^ splitmix64(static_cast<std::uint64_t>(id.replica)));
  const std::uint64_t h = splitmix64(seed ^ splitmix64(tensor ^ splitmix64(global_index)));
  const float unit = static_cast<float>(h >> 40) * 0x1p-24f;  // [0, 1), 24 bits
  return scale * (2.0f * unit - 1.0f);
}

Tensor make_block(std::uint64_t seed, TensorId id, const BlockSpec& b, float scale,
                  DataType storage) {
  Tensor t(b.rows, b.cols);
  for (std::size_t r = 0; r < b.rows; ++r)
    for (std::size_t c = 0; c < b.cols; ++c) {
      const std::size_t global = (b.row0 + r) * b.full_cols + (b.col0 + c);
      t.at(r, c) = store_value(data_value(seed, id, global, scale), storage);
    }
  return t;
}

Tensor make_full(std::uint64_t seed, TensorId id, std::size_t rows, std::size_t cols, float scale,
                 DataType storage) {
  return make_block(seed, id, {cols, 0, rows, 0, cols}, scale, storage);
}

float weight_scale(std::size_t fan_in) { return 1.0f / std::sqrt(static_cast<float>(fan_in)); }

}  // namespace collscope::layers
