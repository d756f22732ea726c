#include "collscope/layers/reference/moe_reference.hpp"

#include <algorithm>
#include <cmath>

#include "collscope/layers/math/math.hpp"
#include "collscope/layers/reference/tp_local_reference.hpp"

namespace collscope::layers {
namespace {

// Expert e's whole W1 (w1: true) or W2 from the gathered shards of a replica.
RefTensor whole_expert(const std::vector<Tensor>& by_rank, const std::vector<int>& replica,
                       std::size_t e, std::size_t local, int etp, bool sharded, bool w1,
                       std::size_t h, std::size_t f) {
  const std::size_t p = e / local, le = e % local;
  const std::size_t parts = sharded ? static_cast<std::size_t>(etp) : 1;
  const std::size_t fs = f / parts, rows = w1 ? h : fs;
  std::vector<RefTensor> shards;
  for (std::size_t t = 0; t < parts; ++t)
    shards.push_back(to_ref(row_block(by_rank[static_cast<std::size_t>(
                                          replica[t + static_cast<std::size_t>(etp) * p])],
                                      le * rows, rows)));
  return w1 ? concat_columns(shards) : concat_rows(shards);
}

double dot_row(const RefTensor& a, std::size_t ra, const RefTensor& b, std::size_t rb) {
  double d = 0;
  for (std::size_t c = 0; c < a.cols; ++c) d += a.at(ra, c) * b.at(rb, c);
  return d;
}

}  // namespace

namespace {

// One rank's router in float64, with the run's choices.
struct RefRouter {
  RefTensor logits;                 // X Wr + bias
  std::vector<int> chosen;          // [T k]
  std::vector<std::uint8_t> kept;   // [T k]
  std::vector<double> gates, dgates;
};

RefRouter ref_router(const RefTensor& x, const RefTensor& wr, const Tensor& run_routing,
                     const RouterSpec& spec) {
  const std::size_t tokens = x.rows, e = spec.experts, k = spec.topk;
  RefRouter r;
  r.logits = ref_matmul(x, Trans::no, wr, Trans::no);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < e; ++j) r.logits.at(t, j) += routing_bias(spec, t, j);
  r.chosen.resize(tokens * k);
  r.kept.resize(tokens * k);
  r.gates.resize(tokens * k);
  r.dgates.assign(tokens * k, 0.0);
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t j = 0; j < k; ++j) {
      r.chosen[t * k + j] = static_cast<int>(run_routing.at(t, j));
      r.kept[t * k + j] = run_routing.at(t, k + j) != 0 ? 1 : 0;
    }
    gates_of(&r.logits.data[t * e], e, &r.chosen[t * k], k, spec.order, &r.gates[t * k]);
  }
  return r;
}

// The near-tie threshold: 1e-3, plus under bfloat16 the rounding of X Wr (half a unit,
// 2^-9 relative, on each of the two logits compared).
double choice_threshold(const std::vector<RefTensor>& x, const RefTensor& wr, DataType storage) {
  if (storage != DataType::bfloat16) return 1e-3;
  double max_logit = 0;
  for (const RefTensor& xi : x)
    for (double v : ref_matmul(xi, Trans::no, wr, Trans::no).data)
      max_logit = std::max(max_logit, std::abs(v));
  return 1e-3 + max_logit / 256;
}

// The (rank index, slot) assignments kept for expert `ex`, rank after rank.
std::vector<std::pair<std::size_t, std::size_t>> assignments(const std::vector<RefRouter>& routers,
                                                             std::size_t ex) {
  std::vector<std::pair<std::size_t, std::size_t>> who;
  for (std::size_t i = 0; i < routers.size(); ++i)
    for (std::size_t s = 0; s < routers[i].chosen.size(); ++s)
      if (routers[i].kept[s] && static_cast<std::size_t>(routers[i].chosen[s]) == ex)
        who.emplace_back(i, s);
  return who;
}

}  // namespace

MoeReference moe_reference(const MoeBlock& block, const MoeBlock::Gathered& g,
                           const std::vector<int>& replica, const std::vector<RefTensor>& x,
                           const std::vector<RefTensor>& dy, DataType storage) {
  const MoeConfig& cfg = block.config();
  const std::size_t h = block.hidden();
  const std::size_t e = static_cast<std::size_t>(cfg.experts), k = static_cast<std::size_t>(cfg.topk);
  const std::size_t n = replica.size(), f = block.ffn(), local = e / static_cast<std::size_t>(g.ep);
  const bool shard = g.etp > 1 && cfg.etp_scheme == EtpScheme::allgather;
  const RouterSpec spec{e, k, cfg.capacity_factor, cfg.router_order, cfg.routing};
  const RefTensor wr = to_ref(g.wr[static_cast<std::size_t>(replica.front())]);
  MoeReference ref;
  std::vector<RefRouter> routers;
  for (std::size_t i = 0; i < n; ++i)
    routers.push_back(ref_router(x[i], wr, g.routing[static_cast<std::size_t>(replica[i])], spec));
  ref.choice_threshold = choice_threshold(x, wr, storage);
  for (std::size_t i = 0; i < n; ++i)
    ref.choice_mismatches += choice_disagreements(routers[i].logits.data, routers[i].chosen,
                                                  x[i].rows, e, k, ref.choice_threshold);
  // Every expert on its kept assignments from all the replica's ranks.
  std::vector<RefTensor> y, dx;
  for (std::size_t i = 0; i < n; ++i) {
    y.emplace_back(x[i].rows, h);
    dx.emplace_back(x[i].rows, h);
  }
  ref.dw1.assign(e, RefTensor(h, f));
  ref.dw2.assign(e, RefTensor(f, h));
  for (std::size_t ex = 0; ex < e; ++ex) {
    const auto who = assignments(routers, ex);
    if (who.empty()) continue;
    RefTensor xs(who.size(), h), dos(who.size(), h);
    for (std::size_t r = 0; r < who.size(); ++r) {
      const auto [i, s] = who[r];
      for (std::size_t c = 0; c < h; ++c) {
        xs.at(r, c) = x[i].at(s / k, c);
        dos.at(r, c) = routers[i].gates[s] * dy[i].at(s / k, c);
      }
    }
    RefTensor o = xs, dxs = dos;
    if (!cfg.identity_experts) {
      const RefMlp m = ref_mlp(xs, whole_expert(g.w1, replica, ex, local, g.etp, shard, true, h, f),
                               whole_expert(g.w2, replica, ex, local, g.etp, shard, false, h, f), dos);
      o = m.y;
      dxs = m.dx;
      ref.dw1[ex] = m.dw1;
      ref.dw2[ex] = m.dw2;
    }
    for (std::size_t r = 0; r < who.size(); ++r) {
      const auto [i, s] = who[r];
      const std::size_t t = s / k;
      for (std::size_t c = 0; c < h; ++c) {
        y[i].at(t, c) += routers[i].gates[s] * o.at(r, c);
        dx[i].at(t, c) += dxs.at(r, c);
      }
      routers[i].dgates[s] = dot_row(dy[i], t, o, r);
    }
  }
  // Router backward: dgates -> dlogits -> dWr (summed over the replica), dX.
  ref.drouter = RefTensor(h, e);
  for (std::size_t i = 0; i < n; ++i) {
    RefTensor dl(x[i].rows, e);
    for (std::size_t t = 0; t < x[i].rows; ++t)
      gates_backward(&routers[i].logits.data[t * e], e, &routers[i].chosen[t * k], k, spec.order,
                     &routers[i].dgates[t * k], &dl.data[t * e]);
    ref_add(ref.drouter, ref_matmul(x[i], Trans::yes, dl, Trans::no));
    ref_add(dx[i], ref_matmul(dl, Trans::no, wr, Trans::yes));
  }
  ref.y = concat_rows(y);
  ref.dx = concat_rows(dx);
  return ref;
}

void moe_check_weights(const MoeBlock& block, const MoeBlock::Gathered& g,
                       const std::vector<int>& replica, const MoeReference& ref, DataType st,
                       std::vector<TensorCheck>& checks) {
  const MoeConfig& cfg = block.config();
  const std::size_t h = block.hidden();
  const std::size_t tokens = ref.dx.rows;  // all the replica's tokens
  Tensor dwr = g.dwr[static_cast<std::size_t>(replica.front())];
  for (std::size_t i = 1; i < replica.size(); ++i) {
    const Tensor& part = g.dwr[static_cast<std::size_t>(replica[i])];
    for (std::size_t j = 0; j < dwr.size(); ++j) dwr.data[j] += part.data[j];
  }
  add_check(checks, "dWr (sum over the expert group)", compare(dwr, ref.drouter, st, tokens));
  if (cfg.identity_experts) return;
  const std::size_t e = static_cast<std::size_t>(cfg.experts), f = block.ffn();
  const std::size_t local = e / static_cast<std::size_t>(g.ep);
  const bool shard = g.etp > 1 && cfg.etp_scheme == EtpScheme::allgather;
  // Sharded: the shards assembled; otherwise every ETP rank's copy (replicated experts'
  // gradients after the ETP allreduce) on its own.
  const int copies = shard ? 1 : g.etp;
  for (int copy = 0; copy < copies; ++copy) {
    std::vector<int> shifted = replica;
    if (!shard)  // copy `copy` of every ETP group at the position of etp 0
      for (std::size_t i = 0; i < shifted.size(); i += static_cast<std::size_t>(g.etp))
        shifted[i] = replica[i + static_cast<std::size_t>(copy)];
    for (std::size_t ex = 0; ex < e; ++ex) {
      const RefTensor w1 = whole_expert(g.dw1, shifted, ex, local, g.etp, shard, true, h, f);
      const RefTensor w2 = whole_expert(g.dw2, shifted, ex, local, g.etp, shard, false, h, f);
      Tensor got1(w1.rows, w1.cols), got2(w2.rows, w2.cols);
      std::transform(w1.data.begin(), w1.data.end(), got1.data.begin(),
                     [](double v) { return static_cast<float>(v); });
      std::transform(w2.data.begin(), w2.data.end(), got2.data.begin(),
                     [](double v) { return static_cast<float>(v); });
      add_check(checks, "dW1", compare(got1, ref.dw1[ex], st, tokens));
      add_check(checks, "dW2", compare(got2, ref.dw2[ex], st, tokens));
    }
  }
}

void moe_check_routing(const MoeReference& ref, std::vector<TensorCheck>& checks) {
  ErrorStats e;
  e.rel_l2_error = static_cast<double>(ref.choice_mismatches);
  e.max_abs_error = static_cast<double>(ref.choice_mismatches);
  e.tolerance = 0;
  e.max_abs_tolerance = ref.choice_threshold;
  e.pass = ref.choice_mismatches == 0;
  add_check(checks, "routing choice (tokens off beyond a near tie)", e);
}

}  // namespace collscope::layers
