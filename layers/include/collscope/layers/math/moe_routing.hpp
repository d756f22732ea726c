// MoE routing, pure (no MPI): the router's top-k in both orders, the capacity drop, the
// permutation by expert, and the split matrices of the all-to-all-v calls (moe_block).
//
// Router (T tokens, E experts, top-k), per token t with logits l[t, 0..E-1]:
//   softmax_topk (Megatron's default): p = softmax(l) over E; chosen = the k largest p;
//                gate_j = p[chosen_j]            (the gates do not sum to 1)
//   topk_softmax: chosen = the k largest l; gate = softmax(l[chosen]) over the k
// softmax is monotone, so both orders choose the k largest logits (ties: lower expert
// index first); slot j = 0..k-1 holds the j-th largest. The backward of the selection
// is zero (piecewise constant); through the softmax:
//   softmax_topk: dl[e] = p[e] (dp[e] - sum_e' p[e'] dp[e']), dp[chosen_j] = dgate_j, else 0
//   topk_softmax: dl[chosen_j] = g_j (dg_j - sum_i g_i dg_i), other experts 0.
//
// Routing modes (logits = X Wr + bias, bias a function of the local token index t, so
// the reference recomputes it; X Wr has standard deviation ~1/3 for the data generator):
//   learned: bias 0.
//   uniform: bias 4 on experts (t k + j) mod E, j < k: the router picks exactly those
//            (4 = 12 standard deviations; not more, so that at k = 1 the softmax_topk
//            gradient p (1 - p) keeps float32 precision); a rank's T tokens fill T k
//            consecutive slots mod E, so with
//            T k divisible by E every expert gets exactly T k / E tokens from every rank.
//   skewed:  bias 1 (3 standard deviations) on the E/4 "hot" experts 0 .. max(1, E/4)-1:
//            most tokens pick them, and they all live on EP rank 0: uneven all-to-all-v.
// The bias is a constant: the router's gradient is the learned one's.
//
// Capacity (capacity_factor C > 0; 0 = dropless): per expert per rank at most
//   capacity = ceil(C x T x k / E) assignments. Drop policy: an expert keeps its
// `capacity` assignments with the highest gate (ties: lower token first) and drops the
// rest; a dropped slot contributes 0 to the token's output and gets no gradient; the
// token's other slots keep their gates (no renormalisation, as Megatron). No padding to
// the capacity (Megatron's pad_expert_input_to_capacity is off by default).
//
// Permutation: the kept slots (t k + j), sorted by expert, stable by token, so each
// destination EP rank gets one contiguous block, sorted by expert.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::layers {

enum class RouterOrder { softmax_topk, topk_softmax };
enum class RoutingMode { learned, uniform, skewed };

// Throw UsageError for other names.
RouterOrder parse_router_order(const std::string& s);
RoutingMode parse_routing_mode(const std::string& s);
std::string_view router_order_name(RouterOrder o);  // "softmax_topk", "topk_softmax"
std::string_view routing_mode_name(RoutingMode m);  // "learned", "uniform", "skewed"

struct RouterSpec {
  std::size_t experts = 4, topk = 2;
  double capacity_factor = 0;  // 0: dropless
  RouterOrder order = RouterOrder::softmax_topk;
  RoutingMode mode = RoutingMode::learned;
};

std::size_t hot_experts(std::size_t experts);  // max(1, E/4)
// The bias added to logit (t, e) by the routing mode.
double routing_bias(const RouterSpec& s, std::size_t token, std::size_t expert);
// ceil(C T k / E); 0 when dropless.
std::size_t expert_capacity(const RouterSpec& s, std::size_t tokens);

// The k largest of row[0..E-1] (descending, ties lower index first).
template <class T>
std::vector<int> top_k(const T* row, std::size_t experts, std::size_t k);

// Gates of one token from its logits and chosen experts.
template <class T>
void gates_of(const T* logits, std::size_t experts, const int* chosen, std::size_t k,
              RouterOrder order, T* gates);
// dlogits [E] of one token from dgates [k].
template <class T>
void gates_backward(const T* logits, std::size_t experts, const int* chosen, std::size_t k,
                    RouterOrder order, const T* dgates, T* dlogits);

struct Routing {
  std::size_t tokens = 0, topk = 0, experts = 0;
  std::vector<int> expert;          // [T k] chosen expert of slot t k + j
  std::vector<float> gate;          // [T k]
  std::vector<std::uint8_t> kept;   // [T k] 1: kept, 0: dropped by the capacity
  std::vector<std::size_t> order;   // kept slots sorted by expert, stable by token
  std::vector<std::int64_t> counts; // [E] kept assignments per expert
};

// Routes T tokens from their logits [T x E] (bias already added).
Routing route(const std::vector<float>& logits, std::size_t tokens, const RouterSpec& s);
// Same selection and drop for given gates (used by route; exposed for the tests).
void apply_capacity(Routing& r, std::size_t capacity);
void permute(Routing& r);

// Tokens whose chosen set differs from the float64 top-k of `logits64` by more than a
// near tie: the smallest float64 logit gap between an expert chosen only by the run and
// one chosen only by float64 exceeds `threshold`.
std::size_t choice_disagreements(const std::vector<double>& logits64,
                                 const std::vector<int>& chosen, std::size_t tokens,
                                 std::size_t experts, std::size_t k, double threshold);

// ---- split matrices (N x N, row = sender, elements) ------------------------------------

// EP dispatch: counts [N x E] (row q: EP rank q's kept assignments per expert), experts
// split in N contiguous ranges; s[i][j] = rows i sends to j x H.
std::vector<std::uint64_t> dispatch_splits(const std::vector<std::int64_t>& counts,
                                           std::size_t n, std::size_t experts, std::size_t h);
std::vector<std::uint64_t> transpose_splits(const std::vector<std::uint64_t>& s, std::size_t n);
// Allgather-v of rows[i] rows each: s[i][j] = rows[i] h (every rank gets every block).
std::vector<std::uint64_t> allgatherv_splits(const std::vector<std::size_t>& rows, std::size_t h);
// Reduce-scatter-v back: s[i][j] = rows[j] h (transpose of the allgather-v).
std::vector<std::uint64_t> reduce_scatterv_splits(const std::vector<std::size_t>& rows,
                                                  std::size_t h);
// Rebalance: the concatenation of rows[0], rows[1], ... redistributed in the uneven-rule
// blocks (total/N + (j < total%N)); s[i][j] = overlap of i's rows with block j, x h.
std::vector<std::uint64_t> rebalance_splits(const std::vector<std::size_t>& rows, std::size_t h);
// First row of block j of `total` rows over n (uneven rule) and its size.
std::size_t even_block_start(std::size_t total, std::size_t n, std::size_t j);
std::size_t even_block_size(std::size_t total, std::size_t n, std::size_t j);

// ---- row layout of received buffers ---------------------------------------------------

// A run of rows of one expert in a concatenated buffer.
struct Segment {
  std::size_t expert = 0, rows = 0;
};
// Rows [offset, offset + rows) of the window.
struct RowSpan {
  std::size_t offset = 0, rows = 0;
};
// For the window [lo, hi) of the concatenated segments: per local expert (first_expert ..
// first_expert + local - 1) its spans, offsets relative to lo.
std::vector<std::vector<RowSpan>> spans_by_expert(const std::vector<Segment>& segments,
                                                  std::size_t lo, std::size_t hi,
                                                  std::size_t first_expert, std::size_t local);

}  // namespace collscope::layers
