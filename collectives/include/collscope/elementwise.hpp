// The element functions of every reduction, written once for the host reducer and the
// device kernels (COLLSCOPE_HD), so both give the same bits on the same inputs.
//
// Integer sum and prod wrap modulo 2^bits (two's complement), computed in unsigned
// arithmetic so there is no signed-overflow UB. Wrapping arithmetic is associative and
// commutative, so integer results are exact whatever order the ranks combine in.
// float16 and bfloat16 are widened to float, combined, and rounded back once per element.
//
// NaN in max/min: a comparison with NaN is false, so they return `b` whenever either
// operand is NaN. A NaN in `b` propagates; a NaN only in `a` is dropped. (This matches
// x86 MAXPS/MINPS with `b` as the source operand, so the host loops vectorise exactly,
// and the GPU's compare-and-select does the same.)
#pragma once

#include <cstdint>
#include <type_traits>

#include "collscope/half.hpp"
#include "collscope/hd.hpp"
#include "collscope/types.hpp"

namespace collscope::elementwise {

// How an element is stored versus computed on: 16-bit floats compute in float.
template <class T>
struct Elem {
  using Compute = T;
  COLLSCOPE_HD static T load(T v) { return v; }
  COLLSCOPE_HD static T store(T v) { return v; }
};
template <>
struct Elem<float16_t> {
  using Compute = float;
  COLLSCOPE_HD static float load(float16_t v) { return to_float(v); }
  COLLSCOPE_HD static float16_t store(float v) { return to_float16(v); }
};
template <>
struct Elem<bfloat16_t> {
  using Compute = float;
  COLLSCOPE_HD static float load(bfloat16_t v) { return to_float(v); }
  COLLSCOPE_HD static bfloat16_t store(float v) { return to_bfloat16(v); }
};

// Unsigned type at least as wide as unsigned int, so int8/uint8 do not promote to
// (signed) int before the operation.
template <class T>
using Wide = decltype(std::make_unsigned_t<T>{} + 0u);

template <class T>
COLLSCOPE_HD T wrap(Wide<T> v) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(v));
}

struct Sum {
  template <class V>
  COLLSCOPE_HD V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>)
      return wrap<V>(static_cast<Wide<V>>(a) + static_cast<Wide<V>>(b));
    else
      return a + b;
  }
};

struct Prod {
  template <class V>
  COLLSCOPE_HD V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>)
      return wrap<V>(static_cast<Wide<V>>(a) * static_cast<Wide<V>>(b));
    else
      return a * b;
  }
};

struct Max {
  template <class V>
  COLLSCOPE_HD V operator()(V a, V b) const {
    return a > b ? a : b;
  }
};

struct Min {
  template <class V>
  COLLSCOPE_HD V operator()(V a, V b) const {
    return a < b ? a : b;
  }
};

// out = a op b for one element.
template <class T, class Op>
COLLSCOPE_HD T reduce_one(T a, T b) {
  using E = Elem<T>;
  return E::store(Op{}(E::load(a), E::load(b)));
}

// v / divisor for the avg operator, in the compute type (one rounding back).
template <class T>
COLLSCOPE_HD T divide_one(T v, int divisor) {
  using E = Elem<T>;
  using C = typename E::Compute;
  return E::store(E::load(v) / static_cast<C>(divisor));
}

// Calls f(T{}) with the storage type of `t` (host code: kernel launchers, loops).
template <class F>
void with_type(DataType t, F&& f) {
  switch (t) {
    case DataType::int8: return f(std::int8_t{});
    case DataType::uint8: return f(std::uint8_t{});
    case DataType::int32: return f(std::int32_t{});
    case DataType::int64: return f(std::int64_t{});
    case DataType::float16: return f(float16_t{});
    case DataType::bfloat16: return f(bfloat16_t{});
    case DataType::float32: return f(float{});
    case DataType::float64: return f(double{});
  }
}

// Calls f(Op{}) with the element operator of `op` (avg reduces as sum).
template <class F>
void with_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return f(Sum{});
    case ReduceOp::prod: return f(Prod{});
    case ReduceOp::max: return f(Max{});
    case ReduceOp::min: return f(Min{});
  }
}

}  // namespace collscope::elementwise
