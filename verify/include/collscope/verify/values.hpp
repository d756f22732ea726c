// The element functions of the test data (data.hpp), written once for the host and the
// GPU (COLLSCOPE_HD): a device fills and checks its buffers with exactly the host's
// values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/half.hpp"
#include "collscope/hd.hpp"
#include "collscope/splitmix.hpp"
#include "collscope/types.hpp"

namespace collscope::verify {

struct DataSpec {
  std::uint64_t seed = 1;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int nranks = 1;
  bool movement = false;
};

namespace values {

COLLSCOPE_HD inline std::uint64_t draw(const DataSpec& s, int rank, std::size_t index) {
  return splitmix64(s.seed ^ splitmix64(static_cast<std::uint64_t>(rank) ^ splitmix64(index)));
}

// Largest magnitude every partial result holds exactly: the exact-integer range of a
// float type; for integer types their range, so no partial sum ever overflows (MPI
// leaves integer overflow undefined, and Open MPI's AVX ops saturate where a plain
// loop wraps: open-mpi/ompi#8045).
COLLSCOPE_HD inline std::int64_t exact_limit(DataType t) {
  switch (t) {
    case DataType::int8: return 127;
    case DataType::uint8: return 255;
    case DataType::int32: return 2147483647;
    case DataType::int64: return std::int64_t{1} << 62;
    case DataType::float16: return 2048;
    case DataType::bfloat16: return 256;
    case DataType::float32: return std::int64_t{1} << 24;
    case DataType::float64: return std::int64_t{1} << 53;
  }
  return 1;
}

COLLSCOPE_HD inline std::int64_t in_range(std::uint64_t h, std::int64_t lo, std::int64_t hi) {
  // In unsigned arithmetic: hi - lo + 1 can exceed INT64_MAX (int64's +-2^62 range).
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + h % span);
}

COLLSCOPE_HD inline std::int64_t clamp(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// The exact integer value of element `index` of `rank`'s input (data.hpp).
COLLSCOPE_HD inline std::int64_t input_value(const DataSpec& s, int rank, std::size_t index) {
  const std::uint64_t h = draw(s, rank, index);
  const bool special = index % static_cast<std::size_t>(s.nranks) == static_cast<std::size_t>(rank);
  const bool is_unsigned = s.dtype == DataType::uint8;
  if (s.movement) {
    const std::int64_t lim = exact_limit(s.dtype);
    return is_unsigned ? in_range(h, 0, lim) : in_range(h, -lim, lim);
  }
  switch (s.op) {
    case ReduceOp::sum:
    case ReduceOp::avg: {
      const std::int64_t m = clamp(exact_limit(s.dtype) / s.nranks, 1, 100);
      return is_unsigned ? in_range(h, 0, m) : in_range(h, -m, m);
    }
    case ReduceOp::prod:  // +-1 everywhere but one rank per index: |product| <= 3
      if (is_unsigned) return special ? in_range(h, 2, 3) : 1;
      return ((h & 1) ? -1 : 1) * (special ? 2 : 1);
    case ReduceOp::max:
    case ReduceOp::min: return is_unsigned ? in_range(h, 0, 200) : in_range(h, -100, 100);
  }
  return 0;
}

// Element i of the reduction of every rank's input, as an exact integer. In 64-bit
// unsigned arithmetic: the inputs keep every partial result in range.
COLLSCOPE_HD inline std::int64_t reduced_value(const DataSpec& s, std::size_t index) {
  std::uint64_t acc = static_cast<std::uint64_t>(input_value(s, 0, index));
  for (int r = 1; r < s.nranks; ++r) {
    const std::int64_t x = input_value(s, r, index);
    const std::int64_t a = static_cast<std::int64_t>(acc);
    switch (s.op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc += static_cast<std::uint64_t>(x); break;
      case ReduceOp::prod: acc *= static_cast<std::uint64_t>(x); break;
      case ReduceOp::max: acc = static_cast<std::uint64_t>(a > x ? a : x); break;
      case ReduceOp::min: acc = static_cast<std::uint64_t>(a < x ? a : x); break;
    }
  }
  return static_cast<std::int64_t>(acc);
}

template <class T>
COLLSCOPE_HD inline void store_as(void* buf, std::size_t i, std::int64_t v) {
  static_cast<T*>(buf)[i] = static_cast<T>(v);
}

// Writes an integer (exact in the dtype, or wrapped for integer types) as dtype.
COLLSCOPE_HD inline void store(void* buf, std::size_t i, std::int64_t v, DataType t) {
  switch (t) {
    case DataType::int8: store_as<std::int8_t>(buf, i, v); break;
    case DataType::uint8: store_as<std::uint8_t>(buf, i, v); break;
    case DataType::int32: store_as<std::int32_t>(buf, i, v); break;
    case DataType::int64: store_as<std::int64_t>(buf, i, v); break;
    case DataType::float16:
      static_cast<float16_t*>(buf)[i] = to_float16(static_cast<float>(v));
      break;
    case DataType::bfloat16:
      static_cast<bfloat16_t*>(buf)[i] = to_bfloat16(static_cast<float>(v));
      break;
    case DataType::float32: store_as<float>(buf, i, v); break;
    case DataType::float64: store_as<double>(buf, i, v); break;
  }
}

COLLSCOPE_HD inline double load(const void* buf, std::size_t i, DataType t) {
  switch (t) {
    case DataType::int8: return static_cast<const std::int8_t*>(buf)[i];
    case DataType::uint8: return static_cast<const std::uint8_t*>(buf)[i];
    case DataType::int32: return static_cast<const std::int32_t*>(buf)[i];
    case DataType::int64: return static_cast<double>(static_cast<const std::int64_t*>(buf)[i]);
    case DataType::float16: return to_float(static_cast<const float16_t*>(buf)[i]);
    case DataType::bfloat16: return to_float(static_cast<const bfloat16_t*>(buf)[i]);
    case DataType::float32: return static_cast<const float*>(buf)[i];
    case DataType::float64: return static_cast<const double*>(buf)[i];
  }
  return 0;
}

// Compares by value (so +0 == -0; NaN never matches anything).
COLLSCOPE_HD inline bool same_value(const void* a, const void* b, std::size_t i, DataType t) {
  if (t == DataType::int64)  // beyond 2^53 a double cannot tell them apart
    return static_cast<const std::int64_t*>(a)[i] == static_cast<const std::int64_t*>(b)[i];
  return load(a, i, t) == load(b, i, t);
}

}  // namespace values
}  // namespace collscope::verify
