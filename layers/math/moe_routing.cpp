#include "collscope/layers/math/moe_routing.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "collscope/errors.hpp"
#include "collscope/layers/math/hd_routing.hpp"

namespace collscope::layers {

RouterOrder parse_router_order(const std::string& s) {
  if (s == "softmax_topk") return RouterOrder::softmax_topk;
  if (s == "topk_softmax") return RouterOrder::topk_softmax;
  throw UsageError("--router-order must be softmax_topk or topk_softmax, got '" + s + "'");
}

RoutingMode parse_routing_mode(const std::string& s) {
  if (s == "learned") return RoutingMode::learned;
  if (s == "uniform") return RoutingMode::uniform;
  if (s == "skewed") return RoutingMode::skewed;
  throw UsageError("--routing must be learned, uniform or skewed, got '" + s + "'");
}

std::string_view router_order_name(RouterOrder o) {
  return o == RouterOrder::softmax_topk ? "softmax_topk" : "topk_softmax";
}

std::string_view routing_mode_name(RoutingMode m) {
  switch (m) {
    case RoutingMode::learned: return "learned";
    case RoutingMode::uniform: return "uniform";
    case RoutingMode::skewed: break;
  }
  return "skewed";
}

std::size_t hot_experts(std::size_t experts) { return hd::hot_experts(experts); }

double routing_bias(const RouterSpec& s, std::size_t token, std::size_t expert) {
  const int mode = s.mode == RoutingMode::learned   ? hd::kRoutingLearned
                   : s.mode == RoutingMode::uniform ? hd::kRoutingUniform
                                                    : hd::kRoutingSkewed;
  return hd::routing_bias(mode, s.experts, s.topk, token, expert);
}

std::size_t expert_capacity(const RouterSpec& s, std::size_t tokens) {
  if (s.capacity_factor <= 0) return 0;
  return static_cast<std::size_t>(std::ceil(s.capacity_factor * static_cast<double>(tokens) *
                                            static_cast<double>(s.topk) /
                                            static_cast<double>(s.experts)));
}

template <class T>
std::vector<int> top_k(const T* row, std::size_t experts, std::size_t k) {
  std::vector<int> idx(k);
  hd::top_k_of(row, experts, k, idx.data());
  return idx;
}

namespace {

int order_code(RouterOrder o) {
  return o == RouterOrder::softmax_topk ? hd::kSoftmaxTopk : hd::kTopkSoftmax;
}

}  // namespace

template <class T>
void gates_of(const T* logits, std::size_t experts, const int* chosen, std::size_t k,
              RouterOrder order, T* gates) {
  hd::gates(logits, experts, chosen, k, order_code(order), gates);
}

template <class T>
void gates_backward(const T* logits, std::size_t experts, const int* chosen, std::size_t k,
                    RouterOrder order, const T* dgates, T* dlogits) {
  hd::gates_backward(logits, experts, chosen, k, order_code(order), dgates, dlogits);
}

template std::vector<int> top_k<float>(const float*, std::size_t, std::size_t);
template std::vector<int> top_k<double>(const double*, std::size_t, std::size_t);
template void gates_of<float>(const float*, std::size_t, const int*, std::size_t, RouterOrder,
                              float*);
template void gates_of<double>(const double*, std::size_t, const int*, std::size_t, RouterOrder,
                               double*);
template void gates_backward<float>(const float*, std::size_t, const int*, std::size_t,
                                    RouterOrder, const float*, float*);
template void gates_backward<double>(const double*, std::size_t, const int*, std::size_t,
                                     RouterOrder, const double*, double*);

// Highest gate first; equal gates: lower slot (token) first (hd::within_capacity).
void apply_capacity(Routing& r, std::size_t capacity) {
  r.kept.assign(r.tokens * r.topk, 1);
  for (std::size_t s = 0; s < r.kept.size(); ++s)
    r.kept[s] = hd::within_capacity(r.expert.data(), r.gate.data(), r.kept.size(), s, capacity);
}

// Kept slots by expert, then by slot (hd::permuted_position).
void permute(Routing& r) {
  std::size_t kept = 0;
  for (std::uint8_t k : r.kept) kept += k;
  r.order.assign(kept, 0);
  for (std::size_t s = 0; s < r.kept.size(); ++s)
    if (r.kept[s]) r.order[hd::permuted_position(r.expert.data(), r.kept.data(), r.kept.size(), s)] = s;
  r.counts.assign(r.experts, 0);
  for (std::size_t s : r.order) ++r.counts[static_cast<std::size_t>(r.expert[s])];
}

Routing route(const std::vector<float>& logits, std::size_t tokens, const RouterSpec& s) {
  Routing r;
  r.tokens = tokens;
  r.topk = s.topk;
  r.experts = s.experts;
  r.expert.resize(tokens * s.topk);
  r.gate.resize(tokens * s.topk);
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* row = logits.data() + t * s.experts;
    const std::vector<int> chosen = top_k(row, s.experts, s.topk);
    std::copy(chosen.begin(), chosen.end(), r.expert.begin() + static_cast<std::ptrdiff_t>(t * s.topk));
    gates_of(row, s.experts, chosen.data(), s.topk, s.order, r.gate.data() + t * s.topk);
  }
  apply_capacity(r, expert_capacity(s, tokens));
  permute(r);
  return r;
}

std::size_t choice_disagreements(const std::vector<double>& logits64,
                                 const std::vector<int>& chosen, std::size_t tokens,
                                 std::size_t experts, std::size_t k, double threshold) {
  std::size_t bad = 0;
  for (std::size_t t = 0; t < tokens; ++t) {
    const double* row = logits64.data() + t * experts;
    const std::vector<int> want = top_k(row, experts, k);
    std::vector<int> got(chosen.begin() + static_cast<std::ptrdiff_t>(t * k),
                         chosen.begin() + static_cast<std::ptrdiff_t>((t + 1) * k));
    double gap = std::numeric_limits<double>::infinity();
    bool differs = false;
    for (int g : got) {
      if (std::find(want.begin(), want.end(), g) != want.end()) continue;
      differs = true;
      for (int w : want)
        if (std::find(got.begin(), got.end(), w) == got.end())
          gap = std::min(gap, std::abs(row[w] - row[g]));
    }
    if (differs && gap > threshold) ++bad;
  }
  return bad;
}

// ---- split matrices ----------------------------------------------------------------------

std::vector<std::uint64_t> dispatch_splits(const std::vector<std::int64_t>& counts,
                                           std::size_t n, std::size_t experts, std::size_t h) {
  const std::size_t local = experts / n;
  std::vector<std::uint64_t> s(n * n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t e = 0; e < experts; ++e)
      s[i * n + e / local] += static_cast<std::uint64_t>(counts[i * experts + e]) * h;
  return s;
}

std::vector<std::uint64_t> transpose_splits(const std::vector<std::uint64_t>& s, std::size_t n) {
  std::vector<std::uint64_t> t(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) t[j * n + i] = s[i * n + j];
  return t;
}

std::vector<std::uint64_t> allgatherv_splits(const std::vector<std::size_t>& rows, std::size_t h) {
  const std::size_t n = rows.size();
  std::vector<std::uint64_t> s(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) s[i * n + j] = rows[i] * h;
  return s;
}

std::vector<std::uint64_t> reduce_scatterv_splits(const std::vector<std::size_t>& rows,
                                                  std::size_t h) {
  return transpose_splits(allgatherv_splits(rows, h), rows.size());
}

std::size_t even_block_start(std::size_t total, std::size_t n, std::size_t j) {
  return j * (total / n) + std::min(j, total % n);
}

std::size_t even_block_size(std::size_t total, std::size_t n, std::size_t j) {
  return total / n + (j < total % n ? 1 : 0);
}

std::vector<std::uint64_t> rebalance_splits(const std::vector<std::size_t>& rows, std::size_t h) {
  const std::size_t n = rows.size();
  const std::size_t total = std::accumulate(rows.begin(), rows.end(), std::size_t{0});
  std::vector<std::uint64_t> s(n * n, 0);
  std::size_t lo = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t hi = lo + rows[i];
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t b0 = even_block_start(total, n, j), b1 = b0 + even_block_size(total, n, j);
      const std::size_t a = std::max(lo, b0), b = std::min(hi, b1);
      if (a < b) s[i * n + j] = (b - a) * h;
    }
    lo = hi;
  }
  return s;
}

std::vector<std::vector<RowSpan>> spans_by_expert(const std::vector<Segment>& segments,
                                                  std::size_t lo, std::size_t hi,
                                                  std::size_t first_expert, std::size_t local) {
  std::vector<std::vector<RowSpan>> out(local);
  std::size_t at = 0;
  for (const Segment& seg : segments) {
    const std::size_t a = std::max(at, lo), b = std::min(at + seg.rows, hi);
    if (a < b && seg.expert >= first_expert && seg.expert < first_expert + local)
      out[seg.expert - first_expert].push_back({a - lo, b - a});
    at += seg.rows;
  }
  return out;
}

}  // namespace collscope::layers
