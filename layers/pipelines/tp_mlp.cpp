// layer_tp_mlp: Megatron's tensor-parallel MLP (Shoeybi et al. 2019, section 3), fc1
// column-parallel, GeLU, fc2 row-parallel, on one TP group of N ranks (and DP = world / N
// replicas, each with its own micro-batch).
//
//   T = S x B tokens, H hidden, F FFN size (default 4H), f = F / N; TP rank t holds
//   X  [T, H]  replicated in the group        W1_t [H, f]  columns t f .. (t+1) f - 1 of W1
//   dY [T, H]  replicated (given gradient)    W2_t [f, H]  rows    t f .. (t+1) f - 1 of W2
//
//   forward                                   backward
//   Z_t  = X W1_t            [T, f]           dA_t  = dY W2_t^T            [T, f]
//   A_t  = gelu(Z_t)         [T, f]           dZ_t  = dA_t * gelu'(Z_t)    [T, f]
//   Y_t  = A_t W2_t          [T, H] partial   dW2_t = A_t^T dY             [f, H]
//   Y    = allreduce_t Y_t   [T, H]  <- (1)   dW1_t = X^T dZ_t             [H, f]
//                                             dX_t  = dZ_t W1_t^T          [T, H] partial
//                                             dX    = allreduce_t dX_t     [T, H]  <- (2)
//
// (1) fc2 is row-parallel: each rank holds a partial sum of Y over its f columns of A.
// (2) X fed every rank's fc1 (Megatron's f: identity forward, allreduce backward), so
//     its gradient is the sum of the ranks' contributions. GeLU is element-wise on the
//     column shard: no collective between the two GEMMs (why fc1 is the column one).
// Volume: ring allreduce of [T, H] sends 2(N-1)/N x T H x elem per rank per call (exact
// theory with uneven blocks: collectives/theory/allreduce.cpp). The textbook figure
// (docs/textbook-formulas.md, tp-mlp) counts each allreduce as 2 Phi, Phi = b s h
// elements, the MLP as 4 Phi (textbook_figure below).
// Verification: Y, dX from every rank; dW1, dW2 assembled from the shards; against the
// float64 MLP on the gathered X, W1, W2, dY, per replica.
// --overlap: (2) runs on the TP group's stream while dW2 and dW1 are computed (they do
// not need dX); without it they follow it. The arithmetic is the same either way.
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

constexpr const char* kForwardSite = "fwd fc2 allreduce Y [T,H]";
constexpr const char* kBackwardSite = "bwd fc1 allreduce dX [T,H]";

struct Shape : TokenShape {
  std::int64_t ffn = 0;  // 0: 4 x hidden
  std::size_t f() const { return static_cast<std::size_t>(ffn > 0 ? ffn : 4 * hidden); }
};

class TpMlp final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_token_flags(app, shape_, "sequence length S (tokens T = S x B)");
    app.add_option("-F,--ffn", shape_.ffn, "FFN size F (default 4 x H), divisible by TP");
  }
  void use_device_defaults(const CLI::App& app) override {
    token_device_defaults(app, shape_);
    device_default(app, "--ffn", shape_.ffn, 4 * kDeviceHidden);
  }
  LayerShape read_options() override {
    check_token_shape(shape_);
    require_at_least(shape_.ffn, 0, "--ffn");
    LayerShape s{.scheme = "tp", .dims = {.ffn = static_cast<std::int64_t>(shape_.f())},
                 .json = token_json(shape_)};
    s.json["F"] = shape_.f();
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig&, Passes p) const override {
    return tp_block_plan(shape_.tokens() * shape_.h(), p, kForwardSite, kBackwardSite);
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override {
    return tp_block_textbook_figure(shape_.tokens() * shape_.h(), c.tp, p, storage, "tp-mlp",
                                    "MLP",
                                    "its 8 b s h per layer adds the attention block's 4 Phi");
  }

  void setup(LayerContext& ctx) override {
    const GroupPosition tp = ctx.position(GroupKind::tp);
    const std::size_t t = shape_.tokens(), h = shape_.h(), f = shape_.f();
    const DataType st = ctx.storage();
    x_ = ctx.replica_input("X", t, h);
    dy_ = ctx.replica_input("dY", t, h);
    w1_ = ctx.upload(fc1_weight_shard(ctx.seed(), h, f, tp.place(), tp.size(), st));
    w2_ = ctx.upload(fc2_weight_shard(ctx.seed(), h, f, tp.place(), tp.size(), st));
  }

  void forward(LayerContext& ctx) override {
    y_ = mlp_forward(x_, w1_, w2_, ctx.storage(), saved_);
    ctx.calls().allreduce(GroupKind::tp, kForwardSite, y_);
  }

  // dX first, its allreduce beside the weight gradients (--overlap).
  void backward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    MlpInputGrad in = mlp_input_grad(w1_, w2_, saved_, dy_, st);
    dx_ = std::move(in.dx);
    const Ticket t =
        ctx.calls().allreduce(GroupKind::tp, kBackwardSite, dx_, ReduceOp::sum, Join::later);
    mlp_weight_grads(x_, saved_, dy_, in.dz, st, dw1_, dw2_);
    ctx.calls().join(t);
  }

  // Y and dX sum over the f columns of A, the weight gradients over the T tokens.
  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const std::size_t f = shape_.f(), t = shape_.tokens();
    return verify_tp_block(ctx, p, {x_, dy_, w1_, w2_, y_, dx_, dw1_, dw2_},
                           {.dw_in = "dW1", .dw_out = "dW2", .y_terms = f, .dx_terms = f,
                            .dw_terms = t},
                           [](const RefTensor& x, const RefTensor& w1, const RefTensor& w2,
                              const RefTensor& dy) -> TpBlockReference {
                             const RefMlp r = ref_mlp(x, w1, w2, dy);
                             return {r.y, r.dx, r.dw1, r.dw2};
                           });
  }

 private:
  Shape shape_;
  Array x_, dy_, w1_, w2_;     // inputs and weights (this rank's shards)
  MlpSaved saved_;             // forward: saved activations
  Array y_;                    // forward: output
  Array dx_, dw1_, dw2_;       // backward: gradients
};

}  // namespace

std::unique_ptr<Layer> make_tp_mlp() { return std::make_unique<TpMlp>(); }

}  // namespace collscope::layers
