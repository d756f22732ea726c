// 16-bit floating storage types: IEEE binary16 ("half") and bfloat16.
//
// Both are plain 2-byte bit containers; arithmetic happens in float. The conversions
// are written with integer bit manipulation and selects instead of branches, so a loop
// over an array of them vectorises. Narrowing rounds to nearest, ties to even; values
// too large for the target become infinity; NaN stays NaN (a quiet NaN, sign kept).
// Portable C++20: no _Float16, no F16C intrinsics. Host and device (COLLSCOPE_HD) share
// them, so the GPU rounds exactly as the CPU does.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "collscope/hd.hpp"

namespace collscope {

struct float16_t {
  std::uint16_t bits;
};
struct bfloat16_t {
  std::uint16_t bits;
};

static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);

namespace detail {
// std::bit_cast on the host; on the GPU (where std::bit_cast is a host function) a
// register move written as memcpy.
template <class To, class From>
COLLSCOPE_HD inline To bits(From from) {
#if defined(__CUDA_ARCH__)
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
#else
  return std::bit_cast<To>(from);
#endif
}

// c ? x : y as a bit mask. A plain ?: lets GCC sink the floating-point work of the
// unused arm into a branch, which then cannot be if-converted back (the FP operation
// might trap), and the loop no longer vectorises. A mask leaves no branch to form.
COLLSCOPE_HD inline std::uint32_t pick(bool c, std::uint32_t x, std::uint32_t y) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return (x & m) | (y & ~m);
}
}  // namespace detail

// binary16 -> float32 is exact: every half value is a float value.
COLLSCOPE_HD inline float to_float(float16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t mag = h.bits & 0x7fffu;  // exponent and mantissa
  // Normal numbers: move the 5-bit exponent and 10-bit mantissa into place and
  // re-bias the exponent from 15 to 127 (add 112 << 23).
  std::uint32_t normal = (mag << 13) + 0x38000000u;
  // Infinity and NaN (exponent 31): add another 112 so the exponent becomes 255; the
  // mantissa, NaN payload included, moves along unchanged.
  normal += detail::pick(mag >= 0x7c00u, 0x38000000u, 0u);
  // Zero and subnormals (exponent 0): the value is mag * 2^-24, exact in float.
  const float sub = static_cast<float>(static_cast<std::int32_t>(mag)) * 0x1p-24f;
  const std::uint32_t magnitude =
      detail::pick(mag < 0x0400u, detail::bits<std::uint32_t>(sub), normal);
  return detail::bits<float>(sign | magnitude);
}

// float32 -> binary16, round to nearest even.
COLLSCOPE_HD inline float16_t to_float16(float f) {
  const std::uint32_t u = detail::bits<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;  // |f| as bits
  // Normal half range [2^-14, 2^16): re-bias the exponent (subtract 112 << 23, written
  // as adding its two's complement), add just under half an ulp of the 13 dropped
  // bits plus the lowest kept bit (ties to even), then shift. A carry out of the
  // mantissa bumps the exponent, which is the right result, up to infinity at 65520.
  const std::uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
  // Below 2^-14 (subnormal or zero): adding 0.5f puts the half's subnormal ulp 2^-24
  // at float's last mantissa bit, so the float adder does the rounding (to nearest
  // even in the default rounding mode); the mantissa bits that remain are the result.
  // A value that rounds up to 2^-14 yields 0x400, the smallest normal half: correct.
  const std::uint32_t sub = detail::bits<std::uint32_t>(detail::bits<float>(a) + 0.5f) -
                            0x3f000000u;
  // 2^16 and above, infinity, NaN.
  const std::uint32_t big = detail::pick(a > 0x7f800000u, 0x7e00u, 0x7c00u);
  const std::uint32_t mag =
      detail::pick(a >= 0x47800000u, big, detail::pick(a < 0x38800000u, sub, normal));
  return float16_t{static_cast<std::uint16_t>(sign | mag)};
}

// bfloat16 is the top half of a float32, so widening is a shift.
COLLSCOPE_HD inline float to_float(bfloat16_t b) {
  return detail::bits<float>(static_cast<std::uint32_t>(b.bits) << 16);
}

// float32 -> bfloat16, round to nearest even. Rounding past the largest finite value
// carries into the exponent and gives infinity, as it should. NaN keeps its sign and
// top payload bits and is made quiet, so it can never round into infinity.
COLLSCOPE_HD inline bfloat16_t to_bfloat16(float f) {
  const std::uint32_t u = detail::bits<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x0040u;
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return bfloat16_t{static_cast<std::uint16_t>(detail::pick(nan, quiet_nan, rounded))};
}

}  // namespace collscope
