// The MoE router's per-token and per-slot math (moe_routing.hpp has the definitions),
// written once (COLLSCOPE_HD) for the host loops, the float64 reference and the GPU
// kernels. Every function reads whole arrays and writes one token's or one slot's
// result, so a kernel runs one thread per token or slot and the host a loop over them.
//
//   top_k_of        the k largest logits of a token, descending, ties to the lower index
//   gates           softmax_topk: softmax over all E, taken at the chosen; topk_softmax:
//                   softmax over the chosen logits
//   gates_backward  the gates' gradient through the softmax to the E logits
//   within_capacity whether a slot is among the `capacity` highest gates of its expert
//                   (equal gates: the lower slot first)
//   permuted_position where a kept slot goes in the permutation: by expert, then by slot
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/layers/math/hd_math.hpp"

namespace collscope::layers::hd {

// Router orders (moe_routing.hpp's RouterOrder, as an int for the kernels).
inline constexpr int kSoftmaxTopk = 0;
inline constexpr int kTopkSoftmax = 1;

// Routing modes (moe_routing.hpp's RoutingMode, as an int for the kernels).
inline constexpr int kRoutingLearned = 0;
inline constexpr int kRoutingUniform = 1;
inline constexpr int kRoutingSkewed = 2;

// The E/4 (at least 1) hot experts of skewed routing.
COLLSCOPE_HD inline std::size_t hot_experts(std::size_t experts) {
  return experts / 4 > 1 ? experts / 4 : 1;
}

// The bias the routing mode adds to logit (token, expert): learned 0; uniform 4 on the
// experts (token k + j) mod E, j < k; skewed 1 on the hot experts.
COLLSCOPE_HD inline double routing_bias(int mode, std::size_t experts, std::size_t topk,
                                        std::size_t token, std::size_t expert) {
  if (mode == kRoutingUniform) {
    const std::size_t first = (token * topk) % experts;
    const std::size_t offset = (expert + experts - first) % experts;
    return offset < topk ? 4.0 : 0.0;
  }
  if (mode == kRoutingSkewed) return expert < hot_experts(experts) ? 1.0 : 0.0;
  return 0.0;
}

// Writes the k chosen experts of one token (descending logit; equal logits: the lower
// expert first) to chosen[0 .. k-1].
template <class T>
COLLSCOPE_HD void top_k_of(const T* row, std::size_t experts, std::size_t k, int* chosen) {
  for (std::size_t j = 0; j < k; ++j) {
    int best = -1;
    for (std::size_t e = 0; e < experts; ++e) {
      bool taken = false;
      for (std::size_t i = 0; i < j; ++i) taken = taken || chosen[i] == static_cast<int>(e);
      if (!taken && (best < 0 || row[e] > row[best])) best = static_cast<int>(e);
    }
    chosen[j] = best;
  }
}

// The max and the sum of exp(x - max) over the n values x_i = logits[i] (index null)
// or logits[index[i]], the max started at x_0 (as std::max over a range).
template <class T>
COLLSCOPE_HD void softmax_stats(const T* logits, const int* index, std::size_t n, T& mx, T& sum) {
  mx = logits[index ? index[0] : 0];
  for (std::size_t i = 1; i < n; ++i) mx = hd::max(mx, logits[index ? index[i] : static_cast<int>(i)]);
  sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += hd::exp(logits[index ? index[i] : static_cast<int>(i)] - mx);
}

// The gates of one token's chosen experts.
template <class T>
COLLSCOPE_HD void gates(const T* logits, std::size_t experts, const int* chosen, std::size_t k,
                        int order, T* gates_out) {
  T mx = 0, sum = 0;
  if (order == kSoftmaxTopk) softmax_stats(logits, static_cast<const int*>(nullptr), experts, mx, sum);
  else softmax_stats(logits, chosen, k, mx, sum);
  for (std::size_t j = 0; j < k; ++j) gates_out[j] = hd::exp(logits[chosen[j]] - mx) / sum;
}

// dp[e] of softmax_topk's backward: the gate gradient of the slot that chose e, else 0.
template <class T>
COLLSCOPE_HD T chosen_gradient(const int* chosen, std::size_t k, const T* dgates, std::size_t e) {
  T v = 0;
  for (std::size_t j = 0; j < k; ++j)
    if (chosen[j] == static_cast<int>(e)) v = dgates[j];
  return v;
}

// dlogits [E] of one token from its gates' gradient.
//   softmax_topk: dl[e] = p[e] (dp[e] - sum_e' p[e'] dp[e']), dp[chosen_j] = dgate_j, else 0
//   topk_softmax: dl[chosen_j] = g_j (dg_j - sum_i g_i dg_i), other experts 0
template <class T>
COLLSCOPE_HD void gates_backward(const T* logits, std::size_t experts, const int* chosen,
                                 std::size_t k, int order, const T* dgates, T* dlogits) {
  for (std::size_t e = 0; e < experts; ++e) dlogits[e] = 0;
  T mx = 0, sum = 0, dot = 0;
  if (order == kSoftmaxTopk) {
    softmax_stats(logits, static_cast<const int*>(nullptr), experts, mx, sum);
    for (std::size_t e = 0; e < experts; ++e)
      dot += hd::exp(logits[e] - mx) / sum * chosen_gradient(chosen, k, dgates, e);
    for (std::size_t e = 0; e < experts; ++e)
      dlogits[e] = hd::exp(logits[e] - mx) / sum * (chosen_gradient(chosen, k, dgates, e) - dot);
    return;
  }
  softmax_stats(logits, chosen, k, mx, sum);
  for (std::size_t j = 0; j < k; ++j) dot += hd::exp(logits[chosen[j]] - mx) / sum * dgates[j];
  for (std::size_t j = 0; j < k; ++j)
    dlogits[chosen[j]] = hd::exp(logits[chosen[j]] - mx) / sum * (dgates[j] - dot);
}

// Whether slot s keeps its place under a capacity of `capacity` per expert (0: no
// limit): fewer than `capacity` slots of its expert rank before it.
COLLSCOPE_HD inline bool within_capacity(const int* expert, const float* gate, std::size_t slots,
                                         std::size_t s, std::size_t capacity) {
  if (capacity == 0) return true;
  std::size_t before = 0;
  for (std::size_t o = 0; o < slots; ++o)
    if (expert[o] == expert[s] && (gate[o] > gate[s] || (gate[o] == gate[s] && o < s))) ++before;
  return before < capacity;
}

// The place of kept slot s in the permutation (kept slots by expert, then by slot).
COLLSCOPE_HD inline std::size_t permuted_position(const int* expert, const std::uint8_t* kept,
                                                  std::size_t slots, std::size_t s) {
  std::size_t pos = 0;
  for (std::size_t o = 0; o < slots; ++o)
    if (kept[o] && (expert[o] < expert[s] || (expert[o] == expert[s] && o < s))) ++pos;
  return pos;
}

}  // namespace collscope::layers::hd
