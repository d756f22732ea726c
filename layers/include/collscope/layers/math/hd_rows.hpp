// The row-wise math of the layers, written once (COLLSCOPE_HD) for the host loops, the
// float64 reference and the GPU: attention's softmax and its backward, LayerNorm, the
// vocabulary-parallel cross-entropy's per-token statistics. Each *_row function is the
// sequential form (one row, columns in order: the host's and the reference's order of
// operations); the GPU kernels split a row over a warp and combine partial maxima and
// sums in a tree, using the same element formulas (the *_value helpers), so their
// results agree within rounding, not bit for bit.
//
// T is the compute type (float, or double for the reference); elements are read with
// hd::load and written through `st`, a function T -> the stored element (hd::Store<Out>,
// or a rounding to the storage dtype that keeps a float).
#pragma once

#include <cmath>
#include <cstddef>

#include "collscope/layers/math/hd_math.hpp"

namespace collscope::layers::hd {

template <class T>
COLLSCOPE_HD T minus_infinity() {
  return -static_cast<T>(INFINITY);
}

// ---- attention softmax: P = softmax(S / sqrt d) over a row, later keys masked ---------------

// exp(s scale - max): one unnormalised probability.
template <class T>
COLLSCOPE_HD T softmax_exp(T s, T scale, T mx) {
  return hd::exp(s * scale - mx);
}

// P's row from the scores' row (n columns, the first `keys` unmasked): max of s scale,
// the sum of exp(s scale - max), then p = exp(...) / sum for j < keys and 0 after.
// `s` and `p` may be the same array.
template <class T, class In, class Out, class St>
COLLSCOPE_HD void softmax_row(const In* s, Out* p, std::size_t n, std::size_t keys, T scale,
                              St st) {
  T mx = minus_infinity<T>();
  for (std::size_t j = 0; j < keys; ++j) mx = hd::max(mx, static_cast<T>(load(s[j])) * scale);
  T sum = 0;
  for (std::size_t j = 0; j < keys; ++j) sum += softmax_exp(static_cast<T>(load(s[j])), scale, mx);
  for (std::size_t j = 0; j < n; ++j)
    p[j] = j < keys ? st(softmax_exp(static_cast<T>(load(s[j])), scale, mx) / sum) : st(T(0));
}

// dS = P (dP - rowsum(dP P)) scale, one element.
template <class T>
COLLSCOPE_HD T softmax_backward_value(T p, T dp, T dot, T scale) {
  return p * (dp - dot) * scale;
}

// dS's row from dP's (dO V^T) and P's; `dp` and `ds` may be the same array.
template <class T, class InDp, class InP, class Out, class St>
COLLSCOPE_HD void softmax_backward_row(const InDp* dp, const InP* p, Out* ds, std::size_t n,
                                       T scale, St st) {
  T dot = 0;
  for (std::size_t j = 0; j < n; ++j)
    dot += static_cast<T>(load(dp[j])) * static_cast<T>(load(p[j]));
  for (std::size_t j = 0; j < n; ++j)
    ds[j] = st(softmax_backward_value(static_cast<T>(load(p[j])), static_cast<T>(load(dp[j])),
                                      dot, scale));
}

// ---- LayerNorm (layernorm.hpp has the formulas) -------------------------------------------

inline constexpr double kLayerNormEpsilon = 1e-5;

// 1 / sqrt(var + eps) from the sum of squared deviations of h values.
template <class T>
COLLSCOPE_HD T layernorm_rstd(T squares, std::size_t h) {
  return T(1) / hd::sqrt(squares / static_cast<T>(h) + static_cast<T>(kLayerNormEpsilon));
}

// Mean and 1 / sqrt(var + eps) of a row of h values.
template <class T, class In>
COLLSCOPE_HD void layernorm_stats(const In* x, std::size_t h, T& mean, T& rstd) {
  T sum = 0;
  for (std::size_t c = 0; c < h; ++c) sum += static_cast<T>(load(x[c]));
  mean = sum / static_cast<T>(h);
  T sq = 0;
  for (std::size_t c = 0; c < h; ++c) {
    const T d = static_cast<T>(load(x[c])) - mean;
    sq += d * d;
  }
  rstd = layernorm_rstd(sq, h);
}

template <class T>
COLLSCOPE_HD T layernorm_xhat(T x, T mean, T rstd) {
  return (x - mean) * rstd;
}

// y = gamma xhat + beta
template <class T>
COLLSCOPE_HD T layernorm_value(T x, T mean, T rstd, T gamma, T beta) {
  return gamma * layernorm_xhat(x, mean, rstd) + beta;
}

// dx = rstd (dy gamma - mean(g) - xhat mean(g xhat)), g = dy gamma
template <class T>
COLLSCOPE_HD T layernorm_dx(T x, T dy, T gamma, T mean, T rstd, T mean_g, T mean_gx) {
  return rstd * (dy * gamma - mean_g - layernorm_xhat(x, mean, rstd) * mean_gx);
}

// One row of the input gradient, given the row's mean and rstd.
template <class T, class InX, class InG, class InD, class Out, class St>
COLLSCOPE_HD void layernorm_backward_row(const InX* x, const InG* gamma, const InD* dy,
                                         std::size_t h, T mean, T rstd, Out* dx, St st) {
  T mean_g = 0, mean_gx = 0;
  for (std::size_t c = 0; c < h; ++c) {
    const T g = static_cast<T>(load(dy[c])) * static_cast<T>(load(gamma[c]));
    mean_g += g;
    mean_gx += g * layernorm_xhat(static_cast<T>(load(x[c])), mean, rstd);
  }
  mean_g /= static_cast<T>(h);
  mean_gx /= static_cast<T>(h);
  for (std::size_t c = 0; c < h; ++c)
    dx[c] = st(layernorm_dx(static_cast<T>(load(x[c])), static_cast<T>(load(dy[c])),
                            static_cast<T>(load(gamma[c])), mean, rstd, mean_g, mean_gx));
}

// ---- vocabulary-parallel cross-entropy (pipelines/vocab_parallel.cpp) ----------------------

// The largest of a row's logits.
template <class T, class In>
COLLSCOPE_HD T row_max(const In* l, std::size_t n) {
  T mx = minus_infinity<T>();
  for (std::size_t j = 0; j < n; ++j) mx = hd::max(mx, static_cast<T>(load(l[j])));
  return mx;
}

// sum_j exp(l_j - max)
template <class T, class In>
COLLSCOPE_HD T row_sum_exp(const In* l, std::size_t n, T mx) {
  T s = 0;
  for (std::size_t j = 0; j < n; ++j) s += hd::exp(static_cast<T>(load(l[j])) - mx);
  return s;
}

// loss = log(sum exp) + max - the target's logit
template <class T>
COLLSCOPE_HD T cross_entropy_loss(T sum_exp, T mx, T target_logit) {
  return hd::log(sum_exp) + mx - target_logit;
}

// d loss_mean / d logit = (softmax - onehot) / T
template <class T>
COLLSCOPE_HD T cross_entropy_grad(T logit, T mx, T sum_exp, bool target, T inv_tokens) {
  const T softmax = hd::exp(logit - mx) / sum_exp;
  return (softmax - (target ? T(1) : T(0))) * inv_tokens;
}

}  // namespace collscope::layers::hd
