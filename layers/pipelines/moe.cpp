// layer_moe: the expert-parallel MoE layer (docs/textbook-formulas.md,
// moe-dispatch-combine and moe-etp) on its own: every rank holds its own T = S x B tokens
// X [T, H] and dY (as after sequence parallelism; distinct per rank), and runs MoeBlock
// (moe_block.cpp: the math, the EP flow, the two ETP schemes and every volume formula;
// moe_routing.hpp: the router, the routing modes and the drop policy).
//
//   --ep (default world / ETP), --etp (default 1), --experts E (divisible by EP),
//   --topk k, --moe-ffn F (default 2H), --capacity-factor C (0: dropless),
//   --routing learned|uniform|skewed, --router-order softmax_topk|topk_softmax,
//   --etp-scheme allgather|scatter_gather, --identity-experts, --chunks C (ETP 1: the
//   tokens through the experts in C chunks; with --overlap chunk c+1's dispatch beside
//   chunk c's experts).
//
// Verification, per EP x ETP expert group (one EDP index): the float64 MoE on the
// gathered X, Wr, experts and dY with the run's routing (its chosen experts and kept
// mask; the gates recomputed in float64): Y and dX of every rank, dWr summed over the
// group (Wr is replicated: the DP / EDP gradient sync sums it, layer_dp_grad), dW1 and dW2
// of every expert; and the "routing choice" check: no token whose choice differs from
// float64's top-k by more than a near tie (gap 1e-3, plus the bfloat16 rounding of the
// logits under bfloat16 storage).
// Volume: the all-to-all-v sites are planned with count 0 and checked by the driver
// against the theory of each rank's split matrix; the count exchanges are allgathers of
// E (then EP x E) int64 per rank.
#include <cmath>

#include "collscope/errors.hpp"
#include "collscope/layers/blocks/moe_block.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"
#include "collscope/layers/reference/moe_reference.hpp"

namespace collscope::layers {
namespace {

using Shape = TokenShape;

constexpr std::int64_t kDeviceExperts = 8;  // -m device (divisible by 1, 2, 4, 8)

class Moe final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_token_flags(app, shape_, "sequence length S (tokens per rank T = S x B)");
    add_moe_options(app, flags_);
  }
  void use_device_defaults(const CLI::App& app) override {
    token_device_defaults(app, shape_);
    device_default(app, "--experts", flags_.config.experts, kDeviceExperts);
  }
  LayerShape read_options() override {
    check_token_shape(shape_);
    cfg_ = read_moe_flags(flags_, shape_.hidden);
    LayerShape s{.scheme = "ep", .dims = {.experts = cfg_.experts}, .json = token_json(shape_)};
    s.json["experts"] = cfg_.experts;
    s.json["topk"] = cfg_.topk;
    s.json["F"] = block().ffn();
    s.json["capacity_factor"] = cfg_.capacity_factor;
    s.json["routing"] = routing_mode_name(cfg_.routing);
    s.json["router_order"] = router_order_name(cfg_.router_order);
    s.json["etp_scheme"] = etp_scheme_name(cfg_.etp_scheme);
    s.json["identity_experts"] = cfg_.identity_experts;
    s.json["chunks"] = cfg_.chunks;
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig& c, Passes p) const override {
    std::vector<PlannedCall> calls;
    const MoeBlock b = block();
    if (p.forward) calls = b.forward_plan(c, shape_.tokens());
    if (p.backward) {
      const std::vector<PlannedCall> bw = b.backward_plan(c, shape_.tokens());
      calls.insert(calls.end(), bw.begin(), bw.end());
    }
    return calls;
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override {
    const double t = static_cast<double>(shape_.tokens()), k = static_cast<double>(cfg_.topk);
    const double passes = (p.forward ? 1 : 0) + (p.backward ? 1 : 0);
    TextbookFigure s;
    s.source = "GShard (Lepikhin et al. 2020), Switch Transformer (Fedus et al. 2021), "
               "DeepSpeed-MoE (Rajbhandari et al. 2022): EP dispatch and combine "
               "(docs/textbook-formulas.md, moe-dispatch-combine)";
    s.formula = "2 b s topk h bytes per all-to-all (half precision), dispatch + combine: "
                "4 b s topk h bytes per forward (vs TP's 4 b s h)";
    s.elements = 2 * t * k * static_cast<double>(shape_.hidden) * passes;
    s.bytes = s.elements * static_cast<double>(dtype_size(storage));
    s.explanation =
        "the figure assumes even routing and rounds the (EP-1)/EP of the tokens that leave "
        "the rank to 1; the exact figure is the rows each rank really routes to other EP "
        "ranks x H x element size, per rank and per call (uneven with learned or skewed "
        "routing, fewer with capacity drops); with uniform routing and T k divisible by E it "
        "is (EP-1)/EP = " + std::to_string(c.ep - 1) + "/" + std::to_string(c.ep) +
        " of the textbook one, nothing at EP 1; the split-size exchange (E int64 per rank) is not "
        "in the figure; under ETP > 1 the ETP all-to-all-v sites add the ETP scheme's "
        "intra-expert traffic (docs/textbook-formulas.md, moe-etp: allgather-v + "
        "reduce-scatter-v of the rows, or the scatter/gather rebalance, which moves only the "
        "routing imbalance), and the backward "
        "repeats the forward's all-to-alls";
    return s;
  }

  void setup(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    const std::size_t t = shape_.tokens(), h = shape_.h();
    x_ = ops::upload(ctx.engine(), make_full(ctx.seed(), {"X", ctx.world_rank()}, t, h, 1.0f, st), st);
    dy_ = ops::upload(ctx.engine(), make_full(ctx.seed(), {"dY", ctx.world_rank()}, t, h, 1.0f, st),
                      st);
    moe_ = std::make_unique<MoeBlock>(cfg_, h, "");
    moe_->setup(ctx);
  }

  void forward(LayerContext& ctx) override { y_ = moe_->forward(ctx, x_); }
  void backward(LayerContext& ctx) override { dx_ = moe_->backward(ctx, dy_); }

  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const MPI_Comm c = ctx.ctrl();
    const MoeBlock::Gathered g = moe_->gather(ctx);
    const std::vector<Tensor> x = gather_to_root(c, x_), dy = gather_to_root(c, dy_),
                              y = gather_to_root(c, y_), dx = gather_to_root(c, dx_);
    std::vector<TensorCheck> checks;
    if (ctx.world_rank() != 0) return checks;
    const DataType st = ctx.storage();
    const std::size_t t = shape_.tokens();
    const std::size_t k_y = cfg_.identity_experts ? 1 : block().ffn();
    for (const std::vector<int>& replica : MoeBlock::replicas(ctx.config())) {
      const MoeReference ref =
          moe_reference(*moe_, g, replica, ref_parts(x, replica), ref_parts(dy, replica), st);
      moe_check_routing(ref, checks);
      for (std::size_t i = 0; i < replica.size(); ++i) {
        const auto r = static_cast<std::size_t>(replica[i]);
        if (p.forward) add_check(checks, "Y", compare(y[r], row_block(ref.y, i * t, t), st, k_y));
        if (p.backward)
          add_check(checks, "dX", compare(dx[r], row_block(ref.dx, i * t, t), st, k_y));
      }
      if (p.backward) moe_check_weights(*moe_, g, replica, ref, st, checks);
    }
    return checks;
  }

 private:
  MoeBlock block() const { return MoeBlock(cfg_, shape_.h(), ""); }

  Shape shape_;
  MoeFlags flags_;
  MoeConfig cfg_;  // read from flags_
  std::unique_ptr<MoeBlock> moe_;
  Array x_, dy_, y_, dx_;
};

}  // namespace

std::unique_ptr<Layer> make_moe() { return std::make_unique<Moe>(); }

}  // namespace collscope::layers
