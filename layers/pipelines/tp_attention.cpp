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

// The float64 attention block, forward and backward, on whole tensors (all heads):
// Y, dX, dWqkv, dWo.
TpBlockReference reference_attention(const Shape& sh, const RefTensor& x,
                                     const RefTensor& wqkv, const RefTensor& wo,
                                     const RefTensor& dy) {
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
  void add_options(CLI::App& app) override {
    add_attention_flags(app, shape_, shape_, "sequence length S (tokens T = S x B)");
  }
  void use_device_defaults(const CLI::App& app) override {
    attention_device_defaults(app, shape_, shape_);
  }
  LayerShape read_options() override {
    check_attention_flags(shape_, shape_);
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
    const std::size_t t = shape_.tokens(), h = shape_.h();
    const DataType st = ctx.storage();
    x_ = ctx.replica_input("X", t, h);
    dy_ = ctx.replica_input("dY", t, h);
    wqkv_ = ctx.upload(qkv_weight_shard(ctx.seed(), h, tp.place(), tp.size(), st));
    wo_ = ctx.upload(out_proj_weight_shard(ctx.seed(), h, tp.place(), tp.size(), st));
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

  // The longest sums: Y over the H context columns, dX over the 3H QKV columns, the
  // weight gradients over the T tokens.
  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const std::size_t h = shape_.h(), t = shape_.tokens();
    return verify_tp_block(ctx, p, {x_, dy_, wqkv_, wo_, y_, dx_, dwqkv_, dwo_},
                           {.dw_in = "dWqkv", .dw_out = "dWo", .y_terms = h, .dx_terms = 3 * h,
                            .dw_terms = t},
                           [this](const RefTensor& x, const RefTensor& wqkv, const RefTensor& wo,
                                  const RefTensor& dy) {
                             return reference_attention(shape_, x, wqkv, wo, dy);
                           });
  }

 private:
  Shape shape_;
  Array x_, dy_, wqkv_, wo_;      // inputs and weights (this rank's shards)
  AttentionSaved core_;           // forward: QKV, P per (head, sequence), context
  Array y_;                       // forward: output
  Array dx_, dwqkv_, dwo_;        // backward: gradients
};

}  // namespace

std::unique_ptr<Layer> make_tp_attention() { return std::make_unique<TpAttention>(); }

}  // namespace collscope::layers
