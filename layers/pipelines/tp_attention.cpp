// layer_tp_attention: Megatron's tensor-parallel self-attention (Shoeybi et al. 2019,
// section 3): the fused QKV projection column-parallel with the heads split over the TP
// group, softmax attention per head (local), the output projection row-parallel; on one TP
// group of N ranks (and DP = world / N replicas, each with its own micro-batch).
//
//   T = S x B tokens (row s B + b: token s of sequence b, Megatron's [s, b, h] order),
//   H hidden, n heads, d = H / n per head, n_t = n / N heads and h = H / N columns per rank.
//   Wqkv [H, 3H]: head g owns columns g 3d .. g 3d + 3d - 1, as [q | k | v] (d each), so
//   TP rank t, holding heads t n_t .. (t+1) n_t - 1, holds one contiguous column block:
//   X  [T, H]  replicated in the group        Wqkv_t [H, 3h]  columns t 3h .. (t+1) 3h - 1
//   dY [T, H]  replicated (given gradient)    Wo_t   [h, H]   rows    t h  .. (t+1) h - 1
//
//   forward                                      backward
//   QKV_t = X Wqkv_t            [T, 3h]          dC_t    = dY Wo_t^T              [T, h]
//   per local head g, sequence b (S rows):       dWo_t   = C_t^T dY               [h, H]
//     P  = softmax(Q K^T / sqrt d)  [S, S]       per head g, sequence b:
//          (--causal 1: key > query masked)        dV = P^T dO, dP = dO V^T,
//     O  = P V                  [S, d]             dS = P * (dP - rowsum(dP * P)),
//   C_t   = the heads' O, side by side [T, h]      dQ = dS K / sqrt d, dK = dS^T Q / sqrt d
//   Y_t   = C_t Wo_t            [T, H] partial   dQKV_t  = the heads' [dQ|dK|dV]   [T, 3h]
//   Y     = allreduce_t Y_t     [T, H]  <- (1)   dWqkv_t = X^T dQKV_t             [H, 3h]
//                                                dX_t    = dQKV_t Wqkv_t^T        [T, H] partial
//                                                dX      = allreduce_t dX_t       [T, H]  <- (2)
//
// (1) The output projection is row-parallel: each rank holds a partial sum of Y over its
//     h rows of Wo (its heads' context columns).
// (2) X fed every rank's QKV projection (Megatron's f: identity forward, allreduce
//     backward), so its gradient is the sum of the ranks' contributions. Attention is
//     independent per head and each rank holds whole heads (heads divisible by TP, the
//     layout check): no collective inside the softmax, forward or backward.
// Volume: ring allreduce of [T, H] sends 2(N-1)/N x T H x elem per rank per call, as the
// MLP. The textbook figure (docs/textbook-formulas.md, tp-attention) counts the attention
// block like the MLP, 2 Phi per allreduce, 4 Phi forward + backward, Phi = b s h elements
// (textbook_figure below).
// Verification: Y, dX from every rank; dWqkv, dWo assembled from the shards; against the
// float64 attention on the gathered X, Wqkv, Wo, dY, per replica. The per-head softmax is
// math.hpp's attention_head (float32, storage-rounded) and ref_attention_head (float64);
// its backward is checked against finite differences in tests/math_test.cpp.
// --overlap: (2) runs on the TP group's stream while dWo and dWqkv are computed.
#include <cmath>

#include "collscope/errors.hpp"
#include "collscope/layers/blocks/tp_block.hpp"
#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"
#include "collscope/layers/reference/tp_local_reference.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kForwardSite = "fwd out-proj allreduce Y [T,H]";
constexpr const char* kBackwardSite = "bwd qkv allreduce dX [T,H]";

struct Shape : TokenShape, AttentionFlags {};

AttentionShape attention_shape(const Shape& sh) { return layers::attention_shape(sh, sh); }

// The float64 attention block, forward and backward, on whole tensors (all heads).
struct Reference {
  RefTensor y, dx, dwqkv, dwo;
};

Reference reference_attention(const Shape& sh, const RefTensor& x, const RefTensor& wqkv,
                              const RefTensor& wo, const RefTensor& dy) {
  const AttentionShape ash = attention_shape(sh);
  const RefAttentionCore core = ref_attention_core_forward(x, wqkv, ash);
  const RefTensor dqkv =
      ref_attention_core_backward(core, ref_matmul(dy, Trans::no, wo, Trans::yes), ash);
  return {ref_matmul(core.context, Trans::no, wo, Trans::no),
          ref_matmul(dqkv, Trans::no, wqkv, Trans::yes), ref_matmul(x, Trans::yes, dqkv, Trans::no),
          ref_matmul(core.context, Trans::yes, dy, Trans::no)};
}

class TpAttention final : public Layer {
 public:
  LayerDescription describe() const override {
    return {.program = "layer_tp_attention",
            .name = "tp_attention",
            .summary = "tensor-parallel self-attention: column-parallel QKV (heads split over "
                       "TP) -> softmax per head -> row-parallel output projection; one "
                       "allreduce [T,H] forward, one backward",
            .degrees = {.tp = true, .tp_defaults_to_world = true},
            .collectives = {Collective::allreduce},
            .groups = {GroupKind::tp}};
  }

  void add_options(CLI::App& app) override {
    add_token_flags(app, shape_, "sequence length S (tokens T = S x B)",
                    "hidden size H, divisible by --heads");
    add_attention_flags(app, shape_);
  }
  void use_device_defaults(const CLI::App& app) override {
    token_device_defaults(app, shape_);
    attention_device_defaults(app, shape_);
  }
  LayerShape read_options() override {
    check_token_shape(shape_);
    check_attention_flags(shape_, shape_.hidden);
    LayerShape s{.scheme = "tp", .dims = {.heads = shape_.heads}, .json = token_json(shape_)};
    add_attention_json(s.json, shape_, shape_);
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig&, Passes p) const override {
    return tp_block_plan(shape_.tokens() * shape_.h(), p, kForwardSite, kBackwardSite);
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override {
    return tp_block_textbook_figure(shape_.tokens() * shape_.h(), c.tp, p, storage,
                                    "tp-attention", "attention",
                                    "as in the figure, nothing moves inside the softmax (whole "
                                    "heads per rank); its 8 b s h per layer adds the MLP's 4 Phi");
  }

  void setup(LayerContext& ctx) override {
    const GroupPosition tp = ctx.position(GroupKind::tp);
    const int replica = ctx.position(GroupKind::dp).position;
    const std::size_t t = shape_.tokens(), h = shape_.h(), n = tp.members.size();
    const std::size_t pos = static_cast<std::size_t>(tp.position);
    const DataType st = ctx.storage();
    Engine& e = ctx.engine();
    x_ = ops::upload(e, make_full(ctx.seed(), {"X", replica}, t, h, 1.0f, st), st);
    dy_ = ops::upload(e, make_full(ctx.seed(), {"dY", replica}, t, h, 1.0f, st), st);
    wqkv_ = ops::upload(e, qkv_weight_shard(ctx.seed(), h, pos, n, st), st);
    wo_ = ops::upload(e, out_proj_weight_shard(ctx.seed(), h, pos, n, st), st);
  }

  void forward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    attention_core_forward(x_, wqkv_, attention_shape(shape_), st, core_);
    y_ = ops::matmul(core_.context, Trans::no, wo_, Trans::no, st);
    ctx.calls().allreduce(GroupKind::tp, kForwardSite, y_);
  }

  // dX first, its allreduce beside the weight gradients (--overlap).
  void backward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    const Array dcontext = ops::matmul(dy_, Trans::no, wo_, Trans::yes, st);
    const Array dqkv = attention_core_backward(core_, dcontext, attention_shape(shape_), st,
                                               attention_ds_dtype(ctx.engine(), st));
    dx_ = ops::matmul(dqkv, Trans::no, wqkv_, Trans::yes, st);
    const Ticket t =
        ctx.calls().allreduce(GroupKind::tp, kBackwardSite, dx_, ReduceOp::sum, Join::later);
    dwo_ = ops::matmul(core_.context, Trans::yes, dy_, Trans::no, st);
    dwqkv_ = ops::matmul(x_, Trans::yes, dqkv, Trans::no, st);
    ctx.calls().join(t);
  }

  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const MPI_Comm c = ctx.ctrl();
    const Gathered g{gather_to_root(c, x_),   gather_to_root(c, wqkv_), gather_to_root(c, wo_),
                     gather_to_root(c, dy_),  gather_to_root(c, y_),    gather_to_root(c, dx_),
                     gather_to_root(c, dwqkv_), gather_to_root(c, dwo_)};
    return checks_per_group(ctx.world_rank(), ctx.config(), GroupKind::tp,
                            [&](const std::vector<int>& group, std::vector<TensorCheck>& checks) {
                              check_group(g, group, p, ctx.storage(), checks);
                            });
  }

 private:
  struct Gathered {
    std::vector<Tensor> x, wqkv, wo, dy, y, dx, dwqkv, dwo;  // by world rank
  };

  // One TP group: its replica's reference against what each of its ranks holds. The
  // longest sums: Y over the H context columns, dX over the 3H QKV columns, the weight
  // gradients over the T tokens.
  void check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                   std::vector<TensorCheck>& checks) const {
    const std::size_t lead = static_cast<std::size_t>(group.front());
    const Reference ref =
        reference_attention(shape_, to_ref(g.x[lead]), concat_columns(ref_parts(g.wqkv, group)),
                            concat_rows(ref_parts(g.wo, group)), to_ref(g.dy[lead]));
    const std::size_t h = shape_.h(), t = shape_.tokens();
    for (int r : group) {
      if (p.forward) add_check(checks, "Y", compare(g.y[r], ref.y, st, h));
      if (p.backward) add_check(checks, "dX", compare(g.dx[r], ref.dx, st, 3 * h));
    }
    if (!p.backward) return;
    add_check(checks, "dWqkv", compare(concat_columns(parts_of(g.dwqkv, group)), ref.dwqkv, st, t));
    add_check(checks, "dWo", compare(concat_rows(parts_of(g.dwo, group)), ref.dwo, st, t));
  }

  Shape shape_;
  Array x_, dy_, wqkv_, wo_;      // inputs and weights (this rank's shards)
  AttentionSaved core_;           // forward: QKV, P per (head, sequence), context
  Array y_;                       // forward: output
  Array dx_, dwqkv_, dwo_;        // backward: gradients
};

}  // namespace

std::unique_ptr<Layer> make_tp_attention() { return std::make_unique<TpAttention>(); }

}  // namespace collscope::layers
