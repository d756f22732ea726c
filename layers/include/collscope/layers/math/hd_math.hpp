// The scalar math of the layers, written once for the host and the GPU (COLLSCOPE_HD, as
// collscope/elementwise.hpp does for the reducers): the host loops of the sharded layers,
// the CUDA kernels (layers/compute/cuda_kernels.cu) and the float64 reference all call
// these, so the three compute the same formulas in the same order of operations.
//
//   load / store   an element as a kernel reads it (float32, bfloat16 widened to float,
//                  float64) and writes it (rounded once, to nearest even, for bfloat16)
//   exp, log, sqrt, erf   the C library's on the host, CUDA's float / double ones on the GPU
//                  (not bit-identical to glibc's: device results agree within the
//                  verification's tolerance, host results are the host's as before)
//   gelu, gelu_grad       the exact GeLU, x Phi(x), and its derivative Phi(x) + x phi(x)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "collscope/half.hpp"
#include "collscope/hd.hpp"

namespace collscope::layers::hd {

// ---- elements ---------------------------------------------------------------------------

COLLSCOPE_HD inline float load(float v) { return v; }
COLLSCOPE_HD inline float load(bfloat16_t v) { return to_float(v); }
COLLSCOPE_HD inline double load(double v) { return v; }

template <class Out>
struct Store;
template <>
struct Store<float> {
  COLLSCOPE_HD float operator()(float v) const { return v; }
};
template <>
struct Store<bfloat16_t> {
  COLLSCOPE_HD bfloat16_t operator()(float v) const { return to_bfloat16(v); }
};
template <>
struct Store<double> {
  COLLSCOPE_HD double operator()(double v) const { return v; }
};

// v as an element of type Out holds it.
template <class Out, class V>
COLLSCOPE_HD Out store(V v) {
  return Store<Out>{}(v);
}

// ---- functions of the C library, float and double ----------------------------------------

#if defined(__CUDA_ARCH__)
COLLSCOPE_HD inline float exp(float x) { return ::expf(x); }
COLLSCOPE_HD inline double exp(double x) { return ::exp(x); }
COLLSCOPE_HD inline float log(float x) { return ::logf(x); }
COLLSCOPE_HD inline double log(double x) { return ::log(x); }
COLLSCOPE_HD inline float sqrt(float x) { return ::sqrtf(x); }
COLLSCOPE_HD inline double sqrt(double x) { return ::sqrt(x); }
COLLSCOPE_HD inline float erf(float x) { return ::erff(x); }
COLLSCOPE_HD inline double erf(double x) { return ::erf(x); }
#else
inline float exp(float x) { return std::exp(x); }
inline double exp(double x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline double log(double x) { return std::log(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline double sqrt(double x) { return std::sqrt(x); }
inline float erf(float x) { return std::erf(x); }
inline double erf(double x) { return std::erf(x); }
#endif

template <class T>
COLLSCOPE_HD T max(T a, T b) {
  return a < b ? b : a;  // std::max's choice: a unless b is larger
}

// std::numbers' values, usable in device code.
template <class T>
inline constexpr T kSqrt2 = static_cast<T>(1.414213562373095048801688724209698079L);
template <class T>
inline constexpr T kInvSqrtPi = static_cast<T>(0.564189583547756286948079451560772586L);

// ---- GeLU -------------------------------------------------------------------------------

// gelu(x) = x/2 (1 + erf(x / sqrt 2))
template <class T>
COLLSCOPE_HD T gelu(T x) {
  return x / 2 * (1 + hd::erf(x / kSqrt2<T>));
}

// gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi)
template <class T>
COLLSCOPE_HD T gelu_grad(T x) {
  const T cdf = (1 + hd::erf(x / kSqrt2<T>)) / 2;
  const T pdf = hd::exp(-x * x / 2) * kInvSqrtPi<T> / kSqrt2<T>;
  return cdf + x * pdf;
}

}  // namespace collscope::layers::hd
