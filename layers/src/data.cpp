#include "collscope/layers/data.hpp"


namespace collscope::layers {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a: stable across runs and builds (std::hash is not guaranteed to be).
std::uint64_t name_hash(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

float data_value(std::uint64_t seed, TensorId id, std::size_t global_index, float scale) {
  const std::uint64_t tensor = mix(name_hash(id.name) ^ mix(static_cast<std::uint64_t>(id.replica)));
  const std::uint64_t h = mix(seed ^ mix(tensor ^ mix(global_index)));
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

}  // namespace collscope::layers
