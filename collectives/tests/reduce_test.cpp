// Tests for the 16-bit float conversions (half.hpp) and the host reducer.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "collscope/errors.hpp"
#include "collscope/half.hpp"
#include "collscope/reducer.hpp"
#include "collscope/types.hpp"

namespace collscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::uint16_t h16(float f) { return to_float16(f).bits; }
std::uint16_t b16(float f) { return to_bfloat16(f).bits; }
float hf(std::uint16_t bits) { return to_float(float16_t{bits}); }
float bf(std::uint16_t bits) { return to_float(bfloat16_t{bits}); }

// ---------------------------------------------------------------- conversions

TEST(Half, IntegersRoundTripExactly) {
  for (int i = -2048; i <= 2048; ++i) {
    const auto f = static_cast<float>(i);
    ASSERT_EQ(hf(h16(f)), f) << i;
  }
}

TEST(BFloat16, IntegersRoundTripExactly) {
  for (int i = -256; i <= 256; ++i) {
    const auto f = static_cast<float>(i);
    ASSERT_EQ(bf(b16(f)), f) << i;
  }
}

TEST(Half, EveryFiniteValueRoundTrips) {
  for (std::uint32_t m = 0; m < 0x7c00u; ++m) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const auto bits = static_cast<std::uint16_t>(m | sign);
      ASSERT_EQ(h16(hf(bits)), bits) << std::hex << bits;
    }
  }
}

TEST(BFloat16, EveryNonNaNValueRoundTrips) {
  for (std::uint32_t m = 0; m <= 0x7f80u; ++m) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const auto bits = static_cast<std::uint16_t>(m | sign);
      ASSERT_EQ(b16(bf(bits)), bits) << std::hex << bits;
    }
  }
}

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(h16(1.0f), 0x3c00);
  EXPECT_EQ(h16(-2.0f), 0xc000);
  EXPECT_EQ(h16(65504.0f), 0x7bff);
  EXPECT_EQ(h16(0.5f), 0x3800);
  EXPECT_EQ(h16(0.0f), 0x0000);
  EXPECT_EQ(h16(-0.0f), 0x8000);
  EXPECT_EQ(h16(kInf), 0x7c00);
  EXPECT_EQ(h16(-kInf), 0xfc00);
  EXPECT_EQ(h16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(h16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(h16(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal

  EXPECT_EQ(hf(0x3c00), 1.0f);
  EXPECT_EQ(hf(0xc000), -2.0f);
  EXPECT_EQ(hf(0x7bff), 65504.0f);
  EXPECT_EQ(hf(0x7c00), kInf);
  EXPECT_EQ(hf(0xfc00), -kInf);
  EXPECT_EQ(hf(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(hf(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(hf(0x8000)), 0x80000000u);  // -0
}

TEST(Half, NaNStaysNaN) {
  const std::uint16_t n = h16(kNaN);
  EXPECT_EQ(n & 0x7c00, 0x7c00);
  EXPECT_NE(n & 0x03ff, 0);
  EXPECT_NE(n & 0x0200, 0);  // quiet
  EXPECT_EQ(h16(-kNaN) & 0x8000, 0x8000);
  // A float NaN whose payload sits only in the low bits must not become infinity.
  EXPECT_NE(h16(std::bit_cast<float>(0x7f800001u)), 0x7c00);
  EXPECT_TRUE(std::isnan(hf(h16(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(hf(0x7e00)));
  EXPECT_TRUE(std::isnan(hf(0x7c01)));  // signalling half NaN
  EXPECT_TRUE(std::isnan(hf(0xffff)));
}

TEST(Half, OverflowAndUnderflow) {
  EXPECT_EQ(h16(65519.0f), 0x7bff);  // below the midpoint to 65536
  EXPECT_EQ(h16(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(h16(1e6f), 0x7c00);
  EXPECT_EQ(h16(-1e30f), 0xfc00);
  EXPECT_EQ(h16(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(h16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(h16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(h16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: even
  EXPECT_EQ(h16(std::ldexp(3.0f, -25)), 0x0002);  // tie between 1 and 2 ulps: even
  EXPECT_EQ(h16(std::ldexp(3.0f, -26)), 0x0001);  // above the midpoint
  EXPECT_EQ(h16(std::ldexp(2047.0f, -25)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(h16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

// Round to nearest, ties to even, in a 16-bit format with `mantissa` stored bits whose 1.0
// is the pattern `one`: at 1 + ulp/2 a tie down to 1.0 (even), at 1 + 3 ulp/2 a tie up to
// 1 + 2 ulp; just above or below a tie, the nearer. Where integers are 2 apart
// (2^(mantissa+1): 2048 in half, 256 in bfloat16) odd ones tie to the even neighbour.
void expect_ties_to_even(std::uint16_t (*to)(float), float (*from)(std::uint16_t), int mantissa,
                         std::uint16_t one) {
  const float half_ulp = std::ldexp(1.0f, -mantissa - 1), nudge = std::ldexp(1.0f, -20);
  EXPECT_EQ(to(1.0f + half_ulp), one);
  EXPECT_EQ(to(1.0f + 3 * half_ulp), one + 2);
  EXPECT_EQ(to(1.0f + half_ulp + nudge), one + 1);
  EXPECT_EQ(to(1.0f + half_ulp - nudge), one);
  const float even = std::ldexp(1.0f, mantissa + 1);
  EXPECT_EQ(from(to(even + 1)), even);
  EXPECT_EQ(from(to(even + 3)), even + 4);
  EXPECT_EQ(from(to(-(even + 3))), -(even + 4));
  EXPECT_EQ(from(to(even + 2)), even + 2);
}

TEST(Half, RoundsToNearestEven) { expect_ties_to_even(h16, hf, 10, 0x3c00); }

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(b16(1.0f), 0x3f80);
  EXPECT_EQ(b16(-2.0f), 0xc000);
  EXPECT_EQ(b16(0.0f), 0x0000);
  EXPECT_EQ(b16(-0.0f), 0x8000);
  EXPECT_EQ(b16(kInf), 0x7f80);
  EXPECT_EQ(b16(-kInf), 0xff80);
  EXPECT_EQ(b16(std::bit_cast<float>(0x7f7f0000u)), 0x7f7f);  // largest finite
  EXPECT_EQ(b16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_EQ(b16(std::bit_cast<float>(0x00010000u)), 0x0001);  // smallest subnormal

  EXPECT_EQ(bf(0x3f80), 1.0f);
  EXPECT_EQ(bf(0xc000), -2.0f);
  EXPECT_EQ(bf(0x7f80), kInf);
  EXPECT_EQ(bf(0xff80), -kInf);
  EXPECT_EQ(bf(0x4049), std::bit_cast<float>(0x40490000u));
}

TEST(BFloat16, NaNStaysQuietNaN) {
  const std::uint16_t n = b16(kNaN);
  EXPECT_TRUE(std::isnan(bf(n)));
  EXPECT_NE(n & 0x0040, 0);
  // Low-payload and all-ones NaNs would round into infinity or wrap without care.
  EXPECT_TRUE(std::isnan(bf(b16(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(bf(b16(std::bit_cast<float>(0x7fffffffu)))));
  EXPECT_TRUE(std::isnan(bf(b16(std::bit_cast<float>(0xffffffffu)))));
  EXPECT_EQ(b16(std::bit_cast<float>(0xff800001u)) & 0x8000, 0x8000);
}

TEST(BFloat16, RoundsToNearestEven) {
  expect_ties_to_even(b16, bf, 7, 0x3f80);
  EXPECT_EQ(b16(std::bit_cast<float>(0x3f7fffffu)), 0x3f80);  // carries into exponent
}

// ---------------------------------------------------------------- reducer vs reference

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

template <class T>
constexpr bool kIsFloat = kIsHalf<T> || std::is_floating_point_v<T>;

template <class T>
double widen(T v) {
  if constexpr (kIsHalf<T>)
    return static_cast<double>(to_float(v));
  else
    return static_cast<double>(v);
}

// The exact sum or product of two 16-bit floats fits in a double (and for float32 the
// double result rounds to float exactly like the float operation), so double arithmetic
// rounded once more gives the correctly rounded result to compare with.
template <class T>
T narrow(double d) {
  if constexpr (std::is_same_v<T, float16_t>)
    return to_float16(static_cast<float>(d));
  else if constexpr (std::is_same_v<T, bfloat16_t>)
    return to_bfloat16(static_cast<float>(d));
  else
    return static_cast<T>(d);
}

template <class T>
bool is_nan(T v) {
  if constexpr (kIsFloat<T>)
    return std::isnan(widen(v));
  else
    return false;
}

// Integers: combine exactly in 64 bits, then keep the low bits (two's complement).
template <class T>
T wrap64(std::uint64_t v) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(v));
}

template <class T>
T reference(T a, T b, ReduceOp op) {
  // Documented NaN rule for max/min: `b` wins when either operand is NaN; so does
  // `b` on equal operands (+0 vs -0).
  if (op == ReduceOp::max || op == ReduceOp::min) {
    bool a_larger = false, equal = false;
    if constexpr (kIsFloat<T>) {
      a_larger = widen(a) > widen(b);
      equal = widen(a) == widen(b);
    } else {
      a_larger = a > b;
      equal = a == b;
    }
    if (is_nan(a) || is_nan(b) || equal) return b;
    return (op == ReduceOp::max) == a_larger ? a : b;
  }
  const bool prod = op == ReduceOp::prod;
  if constexpr (kIsFloat<T>) {
    const double x = widen(a), y = widen(b);
    return narrow<T>(prod ? x * y : x + y);
  } else if constexpr (sizeof(T) == 8) {
    const auto x = static_cast<std::uint64_t>(a), y = static_cast<std::uint64_t>(b);
    return wrap64<T>(prod ? x * y : x + y);
  } else {
    const auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
    return wrap64<T>(static_cast<std::uint64_t>(prod ? x * y : x + y));
  }
}

template <class T>
std::uint64_t raw(T v) {
  if constexpr (sizeof(T) == 1)
    return std::bit_cast<std::uint8_t>(v);
  else if constexpr (sizeof(T) == 2)
    return std::bit_cast<std::uint16_t>(v);
  else if constexpr (sizeof(T) == 4)
    return std::bit_cast<std::uint32_t>(v);
  else
    return std::bit_cast<std::uint64_t>(v);
}

template <class T>
bool same(T x, T y) {
  return (is_nan(x) && is_nan(y)) || raw(x) == raw(y);
}

template <class T>
T from_raw(std::uint64_t r) {
  if constexpr (sizeof(T) == 1)
    return std::bit_cast<T>(static_cast<std::uint8_t>(r));
  else if constexpr (sizeof(T) == 2)
    return std::bit_cast<T>(static_cast<std::uint16_t>(r));
  else if constexpr (sizeof(T) == 4)
    return std::bit_cast<T>(static_cast<std::uint32_t>(r));
  else
    return std::bit_cast<T>(r);
}

// Random bit patterns: every integer, and floats of every magnitude, subnormals
// included. Floating NaN/inf patterns are rerolled, then a few placed on purpose.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    do x = from_raw<T>(rng());
    while (kIsFloat<T> && !std::isfinite(widen(x)));
  }
  return v;
}

template <class T>
T special(double d) {
  if constexpr (kIsHalf<T>)
    return narrow<T>(d);
  else
    return static_cast<T>(d);
}

template <class T>
void place_specials(std::vector<T>& a, std::vector<T>& b) {
  if constexpr (kIsFloat<T>) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    a[7] = special<T>(nan);
    b[11] = special<T>(nan);
    a[13] = special<T>(inf);
    b[17] = special<T>(-inf);
    a[19] = special<T>(inf);
    b[19] = special<T>(-inf);
    a[23] = special<T>(0.0);
    b[23] = special<T>(-0.0);
    a[29] = special<T>(-0.0);
    b[29] = special<T>(0.0);
    a[31] = special<T>(-3.0);
    b[31] = special<T>(-7.0);
  } else {
    a[7] = std::numeric_limits<T>::max();
    b[7] = 1;
    a[11] = std::numeric_limits<T>::min();
    b[11] = std::numeric_limits<T>::max();
  }
}

enum class Alias { none, out_is_a, out_is_b, all_same };

std::string alias_name(Alias m) {
  switch (m) {
    case Alias::none: return "separate";
    case Alias::out_is_a: return "out==a";
    case Alias::out_is_b: return "out==b";
    case Alias::all_same: return "out==a==b";
  }
  return "?";
}

template <class T>
void check_against_reference(DataType t, ReduceOp op) {
  constexpr std::size_t n = 1003;  // odd: exercises vector epilogues
  std::vector<T> a = random_values<T>(n, 1234 + static_cast<unsigned>(op));
  std::vector<T> b = random_values<T>(n, 98765 + static_cast<unsigned>(t));
  place_specials(a, b);
  const ReduceOp ref_op = op == ReduceOp::avg ? ReduceOp::sum : op;  // avg reduces as sum

  for (Alias m : {Alias::none, Alias::out_is_a, Alias::out_is_b, Alias::all_same}) {
    std::vector<T> out(n, from_raw<T>(0x5a5a5a5a5a5a5a5aull));
    std::vector<T> expected(n);
    if (m == Alias::none) {
      host_reducer().reduce(out.data(), a.data(), b.data(), n, t, op);
      for (std::size_t i = 0; i < n; ++i) expected[i] = reference(a[i], b[i], ref_op);
    } else if (m == Alias::out_is_a) {
      out = a;
      host_reducer().reduce(out.data(), out.data(), b.data(), n, t, op);
      for (std::size_t i = 0; i < n; ++i) expected[i] = reference(a[i], b[i], ref_op);
    } else if (m == Alias::out_is_b) {
      out = b;
      host_reducer().reduce(out.data(), a.data(), out.data(), n, t, op);
      for (std::size_t i = 0; i < n; ++i) expected[i] = reference(a[i], b[i], ref_op);
    } else {
      out = a;
      host_reducer().reduce(out.data(), out.data(), out.data(), n, t, op);
      for (std::size_t i = 0; i < n; ++i) expected[i] = reference(a[i], a[i], ref_op);
    }
    int mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (same(out[i], expected[i])) continue;
      ADD_FAILURE() << alias_name(m) << " i=" << i << " a=0x" << std::hex << raw(a[i])
                    << " b=0x" << raw(b[i]) << " got 0x" << raw(out[i]) << " want 0x"
                    << raw(expected[i]);
      if (++mismatches == 5) return;
    }
    EXPECT_EQ(mismatches, 0) << alias_name(m);
  }
}

using Combo = std::tuple<DataType, ReduceOp>;

std::string combo_name(const ::testing::TestParamInfo<Combo>& p) {
  return std::string(dtype_name(std::get<0>(p.param))) + "_" +
         std::string(op_name(std::get<1>(p.param)));
}

class ReduceVsReference : public ::testing::TestWithParam<Combo> {};

TEST_P(ReduceVsReference, MatchesScalarReference) {
  const auto [t, op] = GetParam();
  switch (t) {
    case DataType::int8: return check_against_reference<std::int8_t>(t, op);
    case DataType::uint8: return check_against_reference<std::uint8_t>(t, op);
    case DataType::int32: return check_against_reference<std::int32_t>(t, op);
    case DataType::int64: return check_against_reference<std::int64_t>(t, op);
    case DataType::float16: return check_against_reference<float16_t>(t, op);
    case DataType::bfloat16: return check_against_reference<bfloat16_t>(t, op);
    case DataType::float32: return check_against_reference<float>(t, op);
    case DataType::float64: return check_against_reference<double>(t, op);
  }
  FAIL() << "unhandled dtype";
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceVsReference,
                         ::testing::Combine(::testing::ValuesIn(kAllDataTypes),
                                            ::testing::ValuesIn(kAllReduceOps)),
                         combo_name);

// ---------------------------------------------------------------- targeted cases

template <class T>
T reduce1(T a, T b, DataType t, ReduceOp op) {
  T out{};
  host_reducer().reduce(&out, &a, &b, 1, t, op);
  return out;
}

TEST(HostReducer, IntegerSumWraps) {
  EXPECT_EQ(reduce1<std::int8_t>(100, 100, DataType::int8, ReduceOp::sum), -56);
  EXPECT_EQ(reduce1<std::int8_t>(-128, -1, DataType::int8, ReduceOp::sum), 127);
  EXPECT_EQ(reduce1<std::uint8_t>(200, 100, DataType::uint8, ReduceOp::sum), 44);
  EXPECT_EQ(reduce1<std::int32_t>(INT32_MAX, 1, DataType::int32, ReduceOp::sum), INT32_MIN);
  EXPECT_EQ(reduce1<std::int32_t>(INT32_MIN, -1, DataType::int32, ReduceOp::sum), INT32_MAX);
  EXPECT_EQ(reduce1<std::int64_t>(INT64_MAX, 1, DataType::int64, ReduceOp::sum), INT64_MIN);
}

TEST(HostReducer, IntegerProdWraps) {
  EXPECT_EQ(reduce1<std::int8_t>(100, 3, DataType::int8, ReduceOp::prod), 44);
  EXPECT_EQ(reduce1<std::int8_t>(16, 16, DataType::int8, ReduceOp::prod), 0);
  EXPECT_EQ(reduce1<std::int8_t>(-128, -1, DataType::int8, ReduceOp::prod), -128);
  EXPECT_EQ(reduce1<std::int8_t>(-7, 5, DataType::int8, ReduceOp::prod), -35);
  EXPECT_EQ(reduce1<std::uint8_t>(16, 17, DataType::uint8, ReduceOp::prod), 16);
  EXPECT_EQ(reduce1<std::uint8_t>(255, 255, DataType::uint8, ReduceOp::prod), 1);
  EXPECT_EQ(reduce1<std::int32_t>(65536, 65536, DataType::int32, ReduceOp::prod), 0);
  EXPECT_EQ(reduce1<std::int32_t>(INT32_MIN, -1, DataType::int32, ReduceOp::prod), INT32_MIN);
  EXPECT_EQ(reduce1<std::int64_t>(INT64_MIN, -1, DataType::int64, ReduceOp::prod), INT64_MIN);
  EXPECT_EQ(reduce1<std::int64_t>(std::int64_t{1} << 62, 4, DataType::int64, ReduceOp::prod),
            0);
}

// Wrapping arithmetic is associative: any combining order gives the same bits.
TEST(HostReducer, IntegerSumIsOrderIndependent) {
  const std::vector<std::int8_t> v = {100, 90, -128, 127, 77, -3, 120};
  std::int8_t fwd = 0, bwd = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    fwd = reduce1(fwd, v[i], DataType::int8, ReduceOp::sum);
    bwd = reduce1(bwd, v[v.size() - 1 - i], DataType::int8, ReduceOp::sum);
  }
  EXPECT_EQ(fwd, bwd);
  EXPECT_EQ(fwd, 127);  // 383 mod 256, as a signed byte
}

TEST(HostReducer, MaxMinOnNegatives) {
  EXPECT_EQ(reduce1<std::int8_t>(-5, -100, DataType::int8, ReduceOp::max), -5);
  EXPECT_EQ(reduce1<std::int8_t>(-5, -128, DataType::int8, ReduceOp::min), -128);
  EXPECT_EQ(reduce1<std::uint8_t>(200, 100, DataType::uint8, ReduceOp::max), 200);
  EXPECT_EQ(reduce1<std::uint8_t>(200, 100, DataType::uint8, ReduceOp::min), 100);
  EXPECT_EQ(reduce1<std::int32_t>(-1, INT32_MIN, DataType::int32, ReduceOp::max), -1);
  EXPECT_EQ(reduce1<std::int32_t>(-1, INT32_MIN, DataType::int32, ReduceOp::min), INT32_MIN);
  EXPECT_EQ(reduce1<std::int64_t>(-2, -3, DataType::int64, ReduceOp::max), -2);
  EXPECT_EQ(reduce1<std::int64_t>(-2, -3, DataType::int64, ReduceOp::min), -3);
  EXPECT_EQ(reduce1(-3.0f, -7.0f, DataType::float32, ReduceOp::max), -3.0f);
  EXPECT_EQ(reduce1(-3.0f, -7.0f, DataType::float32, ReduceOp::min), -7.0f);
  EXPECT_EQ(reduce1(-3.0, -7.0, DataType::float64, ReduceOp::max), -3.0);
  EXPECT_EQ(reduce1(-3.0, -7.0, DataType::float64, ReduceOp::min), -7.0);
  const float16_t h3 = to_float16(-3.0f), h7 = to_float16(-7.0f);
  EXPECT_EQ(reduce1(h3, h7, DataType::float16, ReduceOp::max).bits, h3.bits);
  EXPECT_EQ(reduce1(h3, h7, DataType::float16, ReduceOp::min).bits, h7.bits);
  const bfloat16_t b3 = to_bfloat16(-3.0f), b7 = to_bfloat16(-7.0f);
  EXPECT_EQ(reduce1(b3, b7, DataType::bfloat16, ReduceOp::max).bits, b3.bits);
  EXPECT_EQ(reduce1(b3, b7, DataType::bfloat16, ReduceOp::min).bits, b7.bits);
}

TEST(HostReducer, MaxMinNaNTakesSecondOperand) {
  EXPECT_TRUE(std::isnan(reduce1(1.0f, kNaN, DataType::float32, ReduceOp::max)));
  EXPECT_EQ(reduce1(kNaN, 1.0f, DataType::float32, ReduceOp::max), 1.0f);
  EXPECT_TRUE(std::isnan(reduce1(1.0f, kNaN, DataType::float32, ReduceOp::min)));
  EXPECT_EQ(reduce1(kNaN, 1.0f, DataType::float32, ReduceOp::min), 1.0f);
}

TEST(HostReducer, SixteenBitFloatsRoundOncePerCall) {
  // 2048 + 1 = 2049 is a tie in half: to even, 2048. 2048 + 3 = 2051 goes to 2052.
  const float16_t h2048 = to_float16(2048.0f);
  EXPECT_EQ(to_float(reduce1(h2048, to_float16(1.0f), DataType::float16, ReduceOp::sum)),
            2048.0f);
  EXPECT_EQ(to_float(reduce1(h2048, to_float16(3.0f), DataType::float16, ReduceOp::sum)),
            2052.0f);
  EXPECT_EQ(to_float(reduce1(to_float16(300.0f), to_float16(300.0f), DataType::float16,
                             ReduceOp::prod)),
            kInf);  // 90000 overflows half
  const bfloat16_t b256 = to_bfloat16(256.0f);
  EXPECT_EQ(to_float(reduce1(b256, to_bfloat16(1.0f), DataType::bfloat16, ReduceOp::sum)),
            256.0f);
  EXPECT_EQ(to_float(reduce1(b256, to_bfloat16(3.0f), DataType::bfloat16, ReduceOp::sum)),
            260.0f);
}

TEST(HostReducer, AvgReducesLikeSum) {
  std::vector<float> a = {1.5f, -2.0f, 3.0f}, b = {2.5f, 4.0f, -1.0f}, out(3);
  host_reducer().reduce(out.data(), a.data(), b.data(), 3, DataType::float32, ReduceOp::avg);
  EXPECT_EQ(out, (std::vector<float>{4.0f, 2.0f, 2.0f}));
}

TEST(HostReducer, ZeroCountTouchesNothing) {
  std::int32_t a = 1, b = 2, out = 42;
  host_reducer().reduce(&out, &a, &b, 0, DataType::int32, ReduceOp::sum);
  EXPECT_EQ(out, 42);
}

TEST(HostReducer, DivideFloats) {
  std::vector<float> f = {3.0f, -9.0f, 1.5f, 1.0f, kInf};
  host_reducer().divide(f.data(), f.size(), DataType::float32, 3);
  EXPECT_EQ(f, (std::vector<float>{1.0f, -3.0f, 0.5f, 1.0f / 3.0f, kInf}));

  std::vector<double> d = {1.0, 7.0, -4.0};
  host_reducer().divide(d.data(), d.size(), DataType::float64, 3);
  EXPECT_EQ(d, (std::vector<double>{1.0 / 3.0, 7.0 / 3.0, -4.0 / 3.0}));

  std::vector<float16_t> h = {to_float16(7.0f), to_float16(1.0f), to_float16(-6.0f)};
  host_reducer().divide(h.data(), h.size(), DataType::float16, 2);
  EXPECT_EQ(to_float(h[0]), 3.5f);
  EXPECT_EQ(to_float(h[1]), 0.5f);
  EXPECT_EQ(to_float(h[2]), -3.0f);
  host_reducer().divide(h.data(), 1, DataType::float16, 7);
  EXPECT_EQ(to_float(h[0]), 0.5f);
  host_reducer().divide(&h[1], 1, DataType::float16, 3);  // 0.5 / 3, one rounding
  EXPECT_EQ(h[1].bits, to_float16(0.5f / 3.0f).bits);
  EXPECT_EQ(h[1].bits, 0x3155);

  std::vector<bfloat16_t> b = {to_bfloat16(1.0f), to_bfloat16(-10.0f)};
  host_reducer().divide(b.data(), b.size(), DataType::bfloat16, 3);
  EXPECT_EQ(b[0].bits, 0x3eab);  // 1/3 rounded to bfloat16
  EXPECT_EQ(b[1].bits, to_bfloat16(-10.0f / 3.0f).bits);
}

TEST(HostReducer, DivideIntegersThrows) {
  std::int64_t buf[2] = {4, 8};
  for (DataType t : {DataType::int8, DataType::uint8, DataType::int32, DataType::int64}) {
    EXPECT_THROW(host_reducer().divide(buf, 2, t, 2), UsageError) << dtype_name(t);
    EXPECT_THROW(host_reducer().divide(buf, 0, t, 2), UsageError) << dtype_name(t);
  }
  EXPECT_EQ(buf[0], 4);
  EXPECT_EQ(buf[1], 8);
}

TEST(HostReducer, Copy) {
  const std::vector<std::uint8_t> src = {1, 2, 3, 4, 5};
  std::vector<std::uint8_t> dst(5, 0);
  host_reducer().copy(dst.data(), src.data(), 5);
  EXPECT_EQ(dst, src);
  std::vector<std::uint8_t> part(5, 9);
  host_reducer().copy(part.data(), src.data(), 2);
  EXPECT_EQ(part, (std::vector<std::uint8_t>{1, 2, 9, 9, 9}));
  host_reducer().copy(&part[4], &src[4], 1);
  EXPECT_EQ(part, (std::vector<std::uint8_t>{1, 2, 9, 9, 5}));
  host_reducer().copy(part.data(), part.data(), 5);  // self-copy is a no-op
  EXPECT_EQ(part, (std::vector<std::uint8_t>{1, 2, 9, 9, 5}));
  host_reducer().copy(nullptr, nullptr, 0);
}

TEST(ReducerFor, HostIsTheHostReducer) {
  EXPECT_EQ(&reducer_for(MemoryKind::host), &host_reducer());
}

TEST(ReducerFor, DeviceThrowsUsageError) {
  EXPECT_THROW(reducer_for(MemoryKind::device), UsageError);
  try {
    reducer_for(MemoryKind::device);
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collscope
