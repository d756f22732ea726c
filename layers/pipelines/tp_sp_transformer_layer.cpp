// pipelines/tp_sp_transformer_layer.cpp, binary layer_tp_sp: a whole transformer layer
// under TP + SP; not the TP -> SP switch (pipelines/tp_to_sp_switch.cpp, its block
// blocks/tp_to_sp_switch_block.cpp).
//
// layer_tp_sp: one transformer layer under Megatron's tensor parallelism with sequence
// parallelism (Korthikanti et al. 2022: MLP and attention do TP, dropout and LayerNorm do
// SP), forward and backward, on one TP group of N ranks (and DP = world / N replicas, each
// with its own micro-batch). Pre-LayerNorm blocks, no dropout:
//
//   X2 = X  + Attn(LN1(X))      Y = X2 + MLP(LN2(X2))
//
//   T = S x B tokens (row s B + b: token s of sequence b), S divisible by N, so the rows
//   of sequence positions [t S/N, (t+1) S/N) are one contiguous block of T/N rows:
//   X_t, dY_t [T/N, H]       rank t's rows of X and of the given gradient dY
//   gamma1, beta1, gamma2, beta2 [H]   replicated (LayerNorm weights)
//   Wqkv_t [H, 3h], Wo_t [h, H]   its heads (h = H/N columns), as layer_tp_attention
//   W1_t [H, f], W2_t [f, H]      its FFN columns / rows (f = F/N), as layer_tp_mlp
//
//   forward (per block: attention with LN1/Wqkv/Wo, then MLP with LN2/W1/W2)
//   A_t  = LN(X_t)                      [T/N, H]  local (sequence-parallel region)
//   A    = allgather_t A_t              [T, H]   <- (1) "fwd attn allgather LN1(X)"
//   P_t  = Block_t(A)                   [T, H]   partial sum (row-parallel output GEMM)
//   R_t  = reduce-scatter_t P_t         [T/N, H] <- (2) "fwd attn reduce-scatter Y"
//   X2_t = X_t + R_t                    [T/N, H] residual, local
//   ... the same for the MLP block on X2_t: allgather LN2(X2), reduce-scatter, Y_t.
//
//   backward (the mirror, MLP block first)
//   dY   = allgather_t dY_t             [T, H]   <- (3) backward of (2)
//   dA_t = Block_t'(dY)                 [T, H]   partial: A fed every rank's input GEMM
//   dAs_t = reduce-scatter_t dA_t       [T/N, H] <- (4) backward of (1)
//   dX2_t = dY_t + LN2'(dAs_t)          [T/N, H] residual + LayerNorm backward, local
//   ... the same for the attention block from dX2_t, giving dX_t.
//   dG   = allreduce_t [dgamma1|dbeta1|dgamma2|dbeta2]_t   [4H]  <- (5)
//
// (1)-(4) Megatron's gather_from_sequence_parallel_region (allgather forward, reduce-
//     scatter backward) before the column-parallel GEMM and reduce_scatter_to_sequence_
//     parallel_region (reduce-scatter forward, allgather backward) after the row-parallel
//     one: they replace plain TP's allreduce (= reduce-scatter + allgather) and leave
//     LayerNorm (and dropout, residual adds) on T/N rows. Four collectives forward, four
//     backward. This layer keeps the gathered A for the weight gradients; Megatron-LM's
//     LinearWithGradAccumulationAndAsyncCommunication saves only A_t and gathers it again
//     in backward for the weight gradient (overlapped with the input-gradient GEMM): one
//     more allgather of [T, H] per block in backward, not modelled here.
// (5) Each rank's LayerNorm saw only its T/N tokens, so its dgamma, dbeta are partial
//     sums; Megatron marks them sequence-parallel parameters and allreduces them over TP
//     in the gradient sync. Done here at the end of backward, packed into one call of 4H.
// Volume per rank (ring; T H is divisible by N, so every block is (T/N) H):
//   allgather: N-1 blocks out (all but block t+1); reduce-scatter: N-1 (all but t);
//   forward 4 (N-1)/N T H x elem, backward the same + the ring allreduce of 4H
//   (2 (N-1)/N x 4H x elem, uneven blocks when N does not divide 4H).
// The textbook figure (docs/textbook-formulas.md, tp-sp) counts TP+SP as 2 (TP-1)/TP B S H
// x sizeof "per layer": one allgather and one reduce-scatter. The layer has two blocks, so
// each pass sends twice that (textbook_figure).
// Plain TP's ring allreduce sends the same 2 (N-1)/N T H per block: SP moves the same
// bytes as TP (layer_tp_mlp, layer_tp_attention measure it), it only stores 1/N of the
// LayerNorm activations.
// --overlap: each block's backward reduce-scatter of its input gradient (4) runs on the
// TP group's stream while the block's weight gradients are computed.
// Verification: Y, dX (the shards, against the rows of the reference), dWqkv, dWo, dW1,
// dW2 (assembled from the shards), dgamma1, dbeta1, dgamma2, dbeta2 (every rank's
// allreduced copy) against the float64 layer on the gathered X, weights and dY.
#include <algorithm>
#include <cmath>

#include "collscope/errors.hpp"
#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/layernorm.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"
#include "collscope/layers/reference/tp_local_reference.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kFwdAttnGather = "fwd attn allgather LN1(X) [T,H]";
constexpr const char* kFwdAttnScatter = "fwd attn reduce-scatter Y [T,H]";
constexpr const char* kFwdMlpGather = "fwd mlp allgather LN2(X2) [T,H]";
constexpr const char* kFwdMlpScatter = "fwd mlp reduce-scatter Y [T,H]";
constexpr const char* kBwdMlpGather = "bwd mlp allgather dY [T,H]";
constexpr const char* kBwdMlpScatter = "bwd mlp reduce-scatter dLN2 [T,H]";
constexpr const char* kBwdAttnGather = "bwd attn allgather dX2 [T,H]";
constexpr const char* kBwdAttnScatter = "bwd attn reduce-scatter dLN1 [T,H]";
constexpr const char* kBwdLnAllreduce = "bwd LN allreduce dgamma,dbeta [4H]";

struct Shape : TokenShape, AttentionFlags {
  std::int64_t ffn = 0;  // 0: 4H
  std::size_t f() const { return static_cast<std::size_t>(ffn > 0 ? ffn : 4 * hidden); }
};

AttentionShape attention_shape(const Shape& sh) { return layers::attention_shape(sh, sh); }

RefTensor ref_plus(const RefTensor& a, const RefTensor& b) {
  RefTensor out = a;
  ref_add(out, b);
  return out;
}

// A LayerNorm weight: offset + uniform [-1/2, 1/2) (gamma around 1, beta around 0).
Tensor ln_weight(std::uint64_t seed, const char* name, std::size_t h, float offset, DataType st) {
  Tensor w = make_full(seed, {name}, 1, h, 0.5f, st);
  for (float& v : w.data) v += offset;
  round_to_storage(w, st);
  return w;
}

// [dgamma1 | dbeta1 | dgamma2 | dbeta2] as one [1, 4H] row.
template <class T>
Matrix<T> pack_ln_grads(const Matrix<T>& g1, const Matrix<T>& b1, const Matrix<T>& g2,
                        const Matrix<T>& b2) {
  return concat_columns(std::vector<Matrix<T>>{g1, b1, g2, b2});
}

Array pack_ln_grads(const Array& g1, const Array& b1, const Array& g2, const Array& b2) {
  Array out(g1.engine(), 1, 4 * g1.cols(), g1.dtype());
  std::size_t at = 0;
  for (const Array* a : {&g1, &b1, &g2, &b2}) {
    ops::put_columns(out, at, *a);
    at += a->cols();
  }
  return out;
}

// ---- the float64 layer on whole tensors ----------------------------------------------

struct RefWeights {
  RefTensor gamma1, beta1, gamma2, beta2, wqkv, wo, w1, w2;
};

struct Reference {
  RefTensor y, dx, dwqkv, dwo, dw1, dw2, ln_grads;  // ln_grads: [1, 4H] packed
};

Reference reference_layer(const Shape& sh, const RefTensor& x, const RefWeights& w,
                          const RefTensor& dy) {
  const AttentionShape ash = attention_shape(sh);
  // forward
  const RefTensor a1 = ref_layernorm_forward(x, w.gamma1, w.beta1);
  const RefAttentionCore core = ref_attention_core_forward(a1, w.wqkv, ash);
  const RefTensor x2 = ref_plus(x, ref_matmul(core.context, Trans::no, w.wo, Trans::no));
  const RefTensor a2 = ref_layernorm_forward(x2, w.gamma2, w.beta2);
  const RefMlp mlp = ref_mlp(a2, w.w1, w.w2, dy);  // its backward from dY too
  Reference r;
  r.y = ref_plus(x2, mlp.y);
  // backward: MLP block (in ref_mlp), LN2, residual, attention block, LN1, residual
  const RefLayerNormGrads ln2 = ref_layernorm_backward(x2, w.gamma2, mlp.dx);
  const RefTensor dx2 = ref_plus(dy, ln2.dx);
  const RefTensor dqkv =
      ref_attention_core_backward(core, ref_matmul(dx2, Trans::no, w.wo, Trans::yes), ash);
  const RefLayerNormGrads ln1 =
      ref_layernorm_backward(x, w.gamma1, ref_matmul(dqkv, Trans::no, w.wqkv, Trans::yes));
  r.dx = ref_plus(dx2, ln1.dx);
  r.dwqkv = ref_matmul(a1, Trans::yes, dqkv, Trans::no);
  r.dwo = ref_matmul(core.context, Trans::yes, dx2, Trans::no);
  r.dw1 = mlp.dw1;
  r.dw2 = mlp.dw2;
  r.ln_grads = pack_ln_grads(ln1.dgamma, ln1.dbeta, ln2.dgamma, ln2.dbeta);
  return r;
}

// ---- the layer -----------------------------------------------------------------------

class TpSp final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_attention_flags(app, shape_, shape_, "sequence length S, divisible by TP (T = S x B)");
    app.add_option("-F,--ffn", shape_.ffn, "FFN size F (default 4 x H), divisible by TP");
  }
  void use_device_defaults(const CLI::App& app) override {
    attention_device_defaults(app, shape_, shape_);
    device_default(app, "--ffn", shape_.ffn, 4 * kDeviceHidden);
  }
  LayerShape read_options() override {
    check_attention_flags(shape_, shape_);
    require_at_least(shape_.ffn, 0, "--ffn");
    LayerShape s{.scheme = "tp+sp",
                 .dims = {.heads = shape_.heads,
                          .sequence = shape_.seq,
                          .ffn = static_cast<std::int64_t>(shape_.f())},
                 .json = token_json(shape_)};
    add_attention_json(s.json, shape_, shape_);
    s.json["F"] = shape_.f();
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig&, Passes p) const override {
    const std::size_t th = shape_.tokens() * shape_.h();
    const auto call = [](const char* site, Collective coll, std::size_t count) {
      return planned_call(site, coll, GroupKind::tp, count);
    };
    std::vector<PlannedCall> calls;
    if (p.forward)
      calls.insert(calls.end(), {call(kFwdAttnGather, Collective::allgather, th),
                                 call(kFwdAttnScatter, Collective::reduce_scatter, th),
                                 call(kFwdMlpGather, Collective::allgather, th),
                                 call(kFwdMlpScatter, Collective::reduce_scatter, th)});
    if (p.backward)
      calls.insert(calls.end(), {call(kBwdMlpGather, Collective::allgather, th),
                                 call(kBwdMlpScatter, Collective::reduce_scatter, th),
                                 call(kBwdAttnGather, Collective::allgather, th),
                                 call(kBwdAttnScatter, Collective::reduce_scatter, th),
                                 call(kBwdLnAllreduce, Collective::allreduce, 4 * shape_.h())});
    return calls;
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override;

  void setup(LayerContext& ctx) override;
  void forward(LayerContext& ctx) override;
  void backward(LayerContext& ctx) override;
  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override;

 private:
  struct Gathered;  // every rank's shards, on rank 0
  void check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                   std::vector<TensorCheck>& checks) const;

  Array gather_rows(LayerContext& ctx, const char* site, const Array& mine) const;
  Array scatter_rows(LayerContext& ctx, const char* site, const Array& full,
                     Ticket* ticket = nullptr) const;

  Shape shape_;
  std::size_t local_tokens_ = 0;                        // T / N
  Array x_, dy_;                                        // [T/N, H] shards
  Array gamma1_, beta1_, gamma2_, beta2_;               // [1, H] replicated
  Array wqkv_, wo_, w1_, w2_;                           // this rank's weight shards
  // forward, saved for backward
  ops::LayerNormStats ln1_, ln2_;
  Array a1_, a2_;        // gathered LayerNorm outputs [T, H]
  AttentionSaved core_;  // QKV, P, context of the local heads
  Array x2_;             // [T/N, H] after the attention residual
  MlpSaved mlp_;
  Array y_;              // [T/N, H]
  // backward
  Array dx_, dwqkv_, dwo_, dw1_, dw2_;
  Array ln_grads_;       // [1, 4H], allreduced
};

TextbookFigure TpSp::textbook_figure(const ParallelConfig& c, Passes p,
                                     DataType storage) const {
  const double th = static_cast<double>(shape_.tokens() * shape_.h());
  const double n = c.tp, passes = (p.forward ? 1 : 0) + (p.backward ? 1 : 0);
  const std::string frac = std::to_string(c.tp - 1) + "/" + std::to_string(c.tp);
  TextbookFigure s;
  s.source = "Korthikanti et al. 2022 (Megatron sequence parallelism): TP+SP volume per layer "
             "(docs/textbook-formulas.md, tp-sp)";
  s.formula = "2 x (TP-1)/TP x B x S x H x sizeof(dtype) per layer (one AllGather + one "
              "ReduceScatter), counted once per pass";
  s.elements = 2 * (n - 1) / n * th * passes;
  s.bytes = s.elements * static_cast<double>(dtype_size(storage));
  s.explanation =
      "the figure's (TP-1)/TP factor is exact for each collective (T H is divisible by TP, "
      "so the ring sends " + frac + " of [T,H] per allgather and per reduce-scatter), but "
      "its 'per layer' is one allgather + reduce-scatter pair, i.e. one TP block: a "
      "transformer layer has two (attention and MLP), so each pass sends 4 x " + frac +
      " x T H x elem per rank, twice the figure; the backward adds the allreduce of the "
      "LayerNorm weight gradients (2 x " + frac + " x 4H x elem), which the figure leaves out. "
      "Plain TP's ring allreduce sends the same 2 x " + frac + " x T H per block, so SP "
      "moves exactly the bytes of TP (the claim that SP moves 'slightly less' comes from a TP "
      "figure, 2 B S H, that drops the factor)";
  return s;
}

void TpSp::setup(LayerContext& ctx) {
  const GroupPosition tp = ctx.position(GroupKind::tp);
  const int replica = ctx.replica();
  const std::size_t n = tp.size(), pos = tp.place();
  const std::size_t h = shape_.h(), f = shape_.f();
  const std::uint64_t seed = ctx.seed();
  const DataType st = ctx.storage();
  const auto up = [&](const Tensor& t) { return ctx.upload(t); };
  local_tokens_ = shape_.tokens() / n;
  const BlockSpec rows{h, pos * local_tokens_, local_tokens_, 0, h};
  x_ = up(make_block(seed, {"X", replica}, rows, 1.0f, st));
  dy_ = up(make_block(seed, {"dY", replica}, rows, 1.0f, st));
  gamma1_ = up(ln_weight(seed, "gamma1", h, 1.0f, st));
  beta1_ = up(ln_weight(seed, "beta1", h, 0.0f, st));
  gamma2_ = up(ln_weight(seed, "gamma2", h, 1.0f, st));
  beta2_ = up(ln_weight(seed, "beta2", h, 0.0f, st));
  wqkv_ = up(qkv_weight_shard(seed, h, pos, n, st));
  wo_ = up(out_proj_weight_shard(seed, h, pos, n, st));
  w1_ = up(fc1_weight_shard(seed, h, f, pos, n, st));
  w2_ = up(fc2_weight_shard(seed, h, f, pos, n, st));
}

// [T/N, H] -> [T, H] over TP (rank t's rows are block t).
Array TpSp::gather_rows(LayerContext& ctx, const char* site, const Array& mine) const {
  Array all(ctx.engine(), shape_.tokens(), mine.cols(), mine.dtype());
  ctx.calls().allgather(GroupKind::tp, site, mine, all);
  return all;
}

// [T, H] partial sums -> this rank's [T/N, H] rows of their sum over TP; with a ticket,
// joined where the caller says (--overlap).
Array TpSp::scatter_rows(LayerContext& ctx, const char* site, const Array& full,
                         Ticket* ticket) const {
  Array mine(ctx.engine(), local_tokens_, full.cols(), full.dtype());
  const Ticket t = ctx.calls().reduce_scatter(GroupKind::tp, site, full, mine, ReduceOp::sum,
                                              ticket ? Join::later : Join::now);
  if (ticket) *ticket = t;
  return mine;
}

void TpSp::forward(LayerContext& ctx) {
  const DataType st = ctx.storage();
  // attention block
  a1_ = gather_rows(ctx, kFwdAttnGather, ops::layernorm(x_, gamma1_, beta1_, st, ln1_));
  attention_core_forward(a1_, wqkv_, attention_shape(shape_), st, core_);
  const Array attn = ops::matmul(core_.context, Trans::no, wo_, Trans::no, st);
  x2_ = ops::add(x_, scatter_rows(ctx, kFwdAttnScatter, attn), st);
  // MLP block
  a2_ = gather_rows(ctx, kFwdMlpGather, ops::layernorm(x2_, gamma2_, beta2_, st, ln2_));
  const Array mlp = mlp_forward(a2_, w1_, w2_, st, mlp_);
  y_ = ops::add(x2_, scatter_rows(ctx, kFwdMlpScatter, mlp), st);
}

void TpSp::backward(LayerContext& ctx) {
  const DataType st = ctx.storage();
  CollectiveCalls& calls = ctx.calls();
  // MLP block: dY's rows gathered, the partial dLN2 scattered back to rows beside the
  // weight gradients
  const Array dy_all = gather_rows(ctx, kBwdMlpGather, dy_);
  const MlpInputGrad mlp = mlp_input_grad(w1_, w2_, mlp_, dy_all, st);
  Ticket t;
  const Array dln2 = scatter_rows(ctx, kBwdMlpScatter, mlp.dx, &t);
  mlp_weight_grads(a2_, mlp_, dy_all, mlp.dz, st, dw1_, dw2_);
  calls.join(t);
  const ops::LayerNormGrads ln2 = ops::layernorm_backward(x2_, gamma2_, ln2_, dln2, st);
  const Array dx2 = ops::add(dy_, ln2.dx, st);
  // attention block
  const Array dx2_all = gather_rows(ctx, kBwdAttnGather, dx2);
  const Array dcontext = ops::matmul(dx2_all, Trans::no, wo_, Trans::yes, st);
  const Array dqkv = attention_core_backward(core_, dcontext, attention_shape(shape_), st,
                                             attention_ds_dtype(ctx.engine(), st));
  const Array da1 = ops::matmul(dqkv, Trans::no, wqkv_, Trans::yes, st);
  const Array dln1 = scatter_rows(ctx, kBwdAttnScatter, da1, &t);
  dwo_ = ops::matmul(core_.context, Trans::yes, dx2_all, Trans::no, st);
  dwqkv_ = ops::matmul(a1_, Trans::yes, dqkv, Trans::no, st);
  calls.join(t);
  const ops::LayerNormGrads ln1 = ops::layernorm_backward(x_, gamma1_, ln1_, dln1, st);
  dx_ = ops::add(dx2, ln1.dx, st);
  // the sequence-parallel LayerNorm weights' gradients: partial over T/N tokens
  ln_grads_ = pack_ln_grads(ln1.dgamma, ln1.dbeta, ln2.dgamma, ln2.dbeta);
  calls.allreduce(GroupKind::tp, kBwdLnAllreduce, ln_grads_);
}

struct TpSp::Gathered {
  std::vector<Tensor> x, dy, gamma1, beta1, gamma2, beta2, wqkv, wo, w1, w2;  // by world rank
  std::vector<Tensor> y, dx, dwqkv, dwo, dw1, dw2, ln_grads;
};

std::vector<TensorCheck> TpSp::verify(LayerContext& ctx, Passes p) {
  const MPI_Comm c = ctx.ctrl();
  const auto all = [c](const Array& a) { return gather_to_root(c, a); };
  Gathered g{all(x_),   all(dy_),  all(gamma1_), all(beta1_), all(gamma2_), all(beta2_),
             all(wqkv_), all(wo_), all(w1_),     all(w2_),    all(y_),      all(dx_),
             all(dwqkv_), all(dwo_), all(dw1_),  all(dw2_),   all(ln_grads_)};
  return checks_per_group(ctx.world_rank(), ctx.config(), GroupKind::tp,
                          [&](const std::vector<int>& group, std::vector<TensorCheck>& checks) {
                            check_group(g, group, p, ctx.storage(), checks);
                          });
}

// One TP group: its replica's float64 layer against each rank's shards. The longest sums:
// Y through fc2 (F) or the out-projection (H); dX through fc1's input gradient (F) or
// the QKV projection's (3H); the weight and LayerNorm gradients over the T tokens.
void TpSp::check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                       std::vector<TensorCheck>& checks) const {
  const std::size_t lead = static_cast<std::size_t>(group.front());
  const RefWeights w{to_ref(g.gamma1[lead]), to_ref(g.beta1[lead]), to_ref(g.gamma2[lead]),
                     to_ref(g.beta2[lead]),  concat_columns(ref_parts(g.wqkv, group)),
                     concat_rows(ref_parts(g.wo, group)), concat_columns(ref_parts(g.w1, group)),
                     concat_rows(ref_parts(g.w2, group))};
  const Reference ref = reference_layer(shape_, concat_rows(ref_parts(g.x, group)), w,
                                        concat_rows(ref_parts(g.dy, group)));
  const std::size_t h = shape_.h(), f = shape_.f(), t = shape_.tokens();
  const std::size_t tl = t / group.size();
  for (std::size_t i = 0; i < group.size(); ++i) {
    const std::size_t r = static_cast<std::size_t>(group[i]);
    if (p.forward) add_check(checks, "Y", compare(g.y[r], row_block(ref.y, i * tl, tl), st, std::max(f, h)));
    if (!p.backward) continue;
    add_check(checks, "dX", compare(g.dx[r], row_block(ref.dx, i * tl, tl), st, std::max(f, 3 * h)));
    for (std::size_t k = 0; k < 4; ++k) {
      static const char* const kNames[4] = {"dgamma1", "dbeta1", "dgamma2", "dbeta2"};
      add_check(checks, kNames[k],
                compare(column_block(g.ln_grads[r], k * h, h), column_block(ref.ln_grads, k * h, h), st, t));
    }
  }
  if (!p.backward) return;
  add_check(checks, "dWqkv", compare(concat_columns(parts_of(g.dwqkv, group)), ref.dwqkv, st, t));
  add_check(checks, "dWo", compare(concat_rows(parts_of(g.dwo, group)), ref.dwo, st, t));
  add_check(checks, "dW1", compare(concat_columns(parts_of(g.dw1, group)), ref.dw1, st, t));
  add_check(checks, "dW2", compare(concat_rows(parts_of(g.dw2, group)), ref.dw2, st, t));
}

}  // namespace

std::unique_ptr<Layer> make_tp_sp() { return std::make_unique<TpSp>(); }

}  // namespace collscope::layers
