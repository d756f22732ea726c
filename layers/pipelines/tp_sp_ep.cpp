// layer_tp_sp_ep: a TP -> SP -> EP layer flow, forward and backward, on TP = EP = N ranks
// by default (one TP group, one EP group; DP = world / TP replicas of the dense part):
//
//   X [T, H] replicated in the TP group (T = S x B rows, sequence-major)
//   -> attention core, column-parallel QKV with the heads split over TP (tp_local.hpp)
//        C_t [T, H/N]: the context, H-sharded (tp_to_sp_switch_block.hpp's Y_t)
//   -> TP -> SP transition through out_linear Wo [H, H] (tp_to_sp_switch_block.hpp, --scheme):
//        allreduce       row-parallel Wo, allreduce [T,H], keep rows t   (allreduce scheme)
//        reduce_scatter  row-parallel Wo, reduce-scatter [T,H]
//        alltoall        all-to-all C_t -> [T/N, H], replicated Wo         (all-to-all scheme)
//      Z_t [T/N, H]: sequence-sharded
//   -> EP MoE on the sequence-sharded tokens (moe_block.hpp): router top-k, split-size
//      exchange, dispatch all-to-all-v, experts, combine all-to-all-v, weighted sum
//        Y_t [T/N, H]: sequence-sharded output (it can go straight to the next
//        sequence-parallel layer)
//
//   backward from a given dY_t [T/N, H]: MoE backward (two all-to-all-v), the transition's
//   backward (allgather dZ, or all-to-all back + dWo allreduce), the attention core's
//   backward, and dX = allreduce_t (dQKV_t Wqkv_t^T) [T, H]: X fed every rank's QKV
//   projection (as layer_tp_attention).
//
// Volume: each block's sites carry its own formula (tp_to_sp_switch_block.hpp, moe_block.hpp);
// the dX allreduce is the ring's 2(N-1)/N x T H x elem. The textbook figure is
// docs/textbook-formulas.md's for the transition (tp-to-sp: V1 or V2) plus its EP figure
// for the MoE (moe-dispatch-combine).
// Verification: rank 0 gathers everything and runs the float64 flow: per DP replica the
// attention and Z = C Wo on the whole tensors; per expert group the MoE on the Z shards
// of its ranks (with the run's routing, moe_block.hpp); then backward the same way.
#include <cmath>

#include "collscope/errors.hpp"
#include "collscope/layers/blocks/moe_block.hpp"
#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/blocks/tp_to_sp_switch_block.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"
#include "collscope/layers/reference/moe_reference.hpp"
#include "collscope/layers/reference/tp_local_reference.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kDxSite = "bwd qkv allreduce dX [T,H]";

struct Shape : TokenShape, AttentionFlags {
  std::string scheme_name = "alltoall";  // --scheme, read into TpSpEp::scheme_
  AttentionShape attention() const { return attention_shape(*this, *this); }
};

// A run's tensor the transition block assembled as float64 (its values are floats).
Tensor as_float(const RefTensor& r) {
  Tensor t(r.rows, r.cols);
  for (std::size_t i = 0; i < r.size(); ++i) t.data[i] = static_cast<float>(r.data[i]);
  return t;
}

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// What rank 0 gathers for the reference, by world rank.
struct Gathered {
  std::vector<Tensor> x, wqkv, wo, dy, y, dx, dwqkv, dwo;
};

// The float64 dense part of one DP replica (a TP group): attention, then Z = C Wo.
struct RefDense {
  RefTensor x, wqkv, wo;
  RefAttentionCore core;
  RefTensor z;  // [T, H], rows by sequence shard
};

class TpSpEp final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_attention_flags(app, shape_, shape_, "sequence length S, divisible by TP (T = S x B)");
    app.add_option("--scheme", shape_.scheme_name,
                   "TP->SP transition: allreduce, reduce_scatter or alltoall (as layer_tp_to_sp)");
    add_moe_options(app, moe_flags_);
  }
  void use_device_defaults(const CLI::App& app) override {
    attention_device_defaults(app, shape_, shape_);
    device_default(app, "--experts", moe_flags_.config.experts, 8);
  }
  LayerShape read_options() override {
    check_attention_flags(shape_, shape_);
    scheme_ = parse_tp_to_sp_scheme(shape_.scheme_name);
    moe_config_ = read_moe_flags(moe_flags_, shape_.hidden);
    LayerShape s{.scheme = "tp->sp+ep",
                 .dims = {.heads = shape_.heads,
                          .experts = moe_config_.experts,
                          .sequence = shape_.seq},
                 .json = token_json(shape_)};
    s.json["heads"] = shape_.heads;
    s.json["causal"] = shape_.causal != 0;
    s.json["tp_to_sp"] = tp_to_sp_scheme_name(scheme_);
    s.json["experts"] = moe_config_.experts;
    s.json["topk"] = moe_config_.topk;
    s.json["moe_ffn"] = moe_config_.ffn;
    s.json["capacity_factor"] = moe_config_.capacity_factor;
    s.json["routing"] = routing_mode_name(moe_config_.routing);
    s.json["router_order"] = router_order_name(moe_config_.router_order);
    s.json["chunks"] = moe_config_.chunks;
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig& c, Passes p) const override {
    const TpToSpBlock t2s = transition(c);
    const MoeBlock moe(moe_config_, shape_.h(), "moe ");
    const std::size_t local_tokens = shape_.tokens() / static_cast<std::size_t>(c.tp);
    std::vector<PlannedCall> calls;
    if (p.forward) {
      append(calls, t2s.forward_plan());
      append(calls, moe.forward_plan(c, local_tokens));
    }
    if (p.backward) {
      append(calls, moe.backward_plan(c, local_tokens));
      append(calls, t2s.backward_plan());
      calls.push_back(
          planned_call(kDxSite, Collective::allreduce, GroupKind::tp, shape_.tokens() * shape_.h()));
    }
    return calls;
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override;

  void setup(LayerContext& ctx) override {
    const ParallelConfig& c = ctx.config();
    const GroupPosition tp = ctx.position(GroupKind::tp);
    const std::size_t t = shape_.tokens(), h = shape_.h(), n = tp.size();
    const DataType st = ctx.storage();
    x_ = ctx.replica_input("X", t, h);
    // dY of this rank's sequence shard: the MoE's output is sequence-sharded.
    dy_ = ctx.upload(make_full(ctx.seed(), {"dY", ctx.world_rank()}, t / n, h, 1.0f, st));
    wqkv_ = ctx.upload(qkv_weight_shard(ctx.seed(), h, tp.place(), n, st));
    t2s_ = std::make_unique<TpToSpBlock>(transition(c));
    t2s_->setup(ctx, "Wo");
    moe_ = std::make_unique<MoeBlock>(moe_config_, h, "moe ");
    moe_->setup(ctx);
  }

  void forward(LayerContext& ctx) override {
    attention_core_forward(x_, wqkv_, shape_.attention(), ctx.storage(), core_);
    z_ = t2s_->forward(ctx, core_.context);
    y_ = moe_->forward(ctx, z_);
  }

  // dX's allreduce beside dWqkv's GEMM (--overlap).
  void backward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    const Array dz = moe_->backward(ctx, dy_);
    const Array dcontext = t2s_->backward(ctx, dz);
    const Array dqkv = attention_core_backward(core_, dcontext, shape_.attention(), st,
                                               attention_ds_dtype(ctx.engine(), st));
    dx_ = ops::matmul(dqkv, Trans::no, wqkv_, Trans::yes, st);
    const Ticket t =
        ctx.calls().allreduce(GroupKind::tp, kDxSite, dx_, ReduceOp::sum, Join::later);
    dwqkv_ = ops::matmul(x_, Trans::yes, dqkv, Trans::no, st);
    ctx.calls().join(t);
  }

  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override;

 private:
  TpToSpBlock transition(const ParallelConfig& c) const {
    return TpToSpBlock(scheme_, {shape_.tokens(), shape_.h(), shape_.h(), c.tp}, "tp->sp ");
  }
  RefDense reference_dense(const Gathered& g, const std::vector<int>& group) const;
  std::vector<RefTensor> check_moe(const Gathered& g, const MoeBlock::Gathered& moe,
                                   const std::vector<RefTensor>& z_of, const ParallelConfig& config,
                                   Passes p, DataType st, std::vector<TensorCheck>& checks) const;
  void check_dense(const Gathered& g, const std::vector<int>& group, const RefDense& dense,
                   const RefTensor& dz, Passes p, DataType st,
                   std::vector<TensorCheck>& checks) const;

  Shape shape_;
  TpToSpScheme scheme_ = TpToSpScheme::alltoall;  // read from shape_.scheme_name
  MoeFlags moe_flags_;
  MoeConfig moe_config_;  // read from moe_flags_
  std::unique_ptr<TpToSpBlock> t2s_;
  std::unique_ptr<MoeBlock> moe_;
  Array x_, dy_, wqkv_;    // inputs and this rank's QKV shard
  AttentionSaved core_;    // forward: QKV, probabilities, context [T, H/N]
  Array z_, y_;            // forward: the transition's and the MoE's outputs [T/N, H]
  Array dx_, dwqkv_;       // backward
};

TextbookFigure TpSpEp::textbook_figure(const ParallelConfig& c, Passes p,
                                               DataType storage) const {
  const double n = c.tp, s = static_cast<double>(shape_.tokens()), hd = static_cast<double>(shape_.h());
  const double e = static_cast<double>(dtype_size(storage)), k = static_cast<double>(moe_config_.topk);
  const bool alltoall = scheme_ == TpToSpScheme::alltoall;
  TextbookFigure f;
  f.source = "docs/textbook-formulas.md, tp-to-sp (V1, V2) and moe-dispatch-combine (EP: 4 b s "
             "topk h bytes)";
  f.formula = std::string(alltoall ? "V2 = 2(N-1)/N^2 x S Hdim d" : "V1 = 2(N-1)/N x S Hdim d") +
              " (send + receive, S = b s tokens) + EP dispatch and combine 2 x b s topk h d "
              "(b s: the rank's tokens, T / N)";
  const double transition = alltoall ? 2 * (n - 1) / (n * n) * s * hd : 2 * (n - 1) / n * s * hd;
  const double ep = 2 * (s / n) * k * hd;
  const double passes = (p.forward ? 1 : 0) + (p.backward ? 1 : 0);
  f.elements = passes * (transition + ep);
  f.bytes = f.elements * e;
  f.explanation =
      "per pass (the figures count the forward; the backward mirrors it). The TP -> SP figure "
      "counts the ring allreduce as sending (N-1)/N of Z, but a ring allreduce sends "
      "2(N-1)/N (reduce-scatter, then allgather), so the all-to-all scheme moves 1/(2N) of "
      "the allreduce scheme's bytes, not 1/N (docs/textbook-formulas.md, tp-to-sp); against reduce_scatter "
      "the ratio is 1/N. The EP figure drops the (EP-1)/EP "
      "factor and assumes even routing: the exact MoE bytes are the rows each rank really "
      "routes off-rank (the measured sites). Left out by the figures: the split-size "
      "exchange, the backward's dX allreduce over TP (X fed every rank's QKV projection) "
      "and, in the all-to-all scheme, the allreduce of the replicated out_linear's gradient";
  return f;
}

RefDense TpSpEp::reference_dense(const Gathered& g, const std::vector<int>& group) const {
  RefDense r;
  r.x = to_ref(g.x[static_cast<std::size_t>(group.front())]);
  r.wqkv = concat_columns(ref_parts(g.wqkv, group));
  r.wo = t2s_->whole_weight(g.wo, group);
  r.core = ref_attention_core_forward(r.x, r.wqkv, shape_.attention());
  r.z = ref_matmul(r.core.context, Trans::no, r.wo, Trans::no);
  return r;
}

// The dense part's backward of one DP replica from the whole dZ [T, H] the MoE reference
// gave, against what its ranks hold.
void TpSpEp::check_dense(const Gathered& g, const std::vector<int>& group,
                                 const RefDense& dense, const RefTensor& dz, Passes p,
                                 DataType st, std::vector<TensorCheck>& checks) const {
  if (!p.backward) return;
  const std::size_t t = shape_.tokens(), h = shape_.h();
  const RefTensor dcontext = ref_matmul(dz, Trans::no, dense.wo, Trans::yes);
  const RefTensor dwo = ref_matmul(dense.core.context, Trans::yes, dz, Trans::no);
  const RefTensor dqkv = ref_attention_core_backward(dense.core, dcontext, shape_.attention());
  const RefTensor dwqkv = ref_matmul(dense.x, Trans::yes, dqkv, Trans::no);
  const RefTensor dx = ref_matmul(dqkv, Trans::no, dense.wqkv, Trans::yes);
  for (int r : group) add_check(checks, "dX", compare(g.dx[static_cast<std::size_t>(r)], dx, st, 3 * h));
  add_check(checks, "dWqkv", compare(concat_columns(parts_of(g.dwqkv, group)), dwqkv, st, t));
  add_check(checks, "dWo", compare(as_float(t2s_->whole_weight_grad(g.dwo, group)), dwo, st, t));
}

// The MoE per expert group on the ranks' float64 Z shards (by world rank): its Y and
// weight-gradient checks; returns every rank's dZ shard.
std::vector<RefTensor> TpSpEp::check_moe(const Gathered& g, const MoeBlock::Gathered& moe,
                                                 const std::vector<RefTensor>& z_of,
                                                 const ParallelConfig& config, Passes p,
                                                 DataType st,
                                                 std::vector<TensorCheck>& checks) const {
  const std::size_t tl = shape_.tokens() / static_cast<std::size_t>(config.tp), h = shape_.h();
  std::vector<RefTensor> dz_of(static_cast<std::size_t>(config.world));
  for (const std::vector<int>& replica : MoeBlock::replicas(config)) {
    std::vector<RefTensor> xs, dys;
    for (int r : replica) {
      xs.push_back(z_of[static_cast<std::size_t>(r)]);
      dys.push_back(to_ref(g.dy[static_cast<std::size_t>(r)]));
    }
    const MoeReference ref = moe_reference(*moe_, moe, replica, xs, dys, st);
    moe_check_routing(ref, checks);
    for (std::size_t i = 0; i < replica.size(); ++i) {
      const auto r = static_cast<std::size_t>(replica[i]);
      if (p.forward) add_check(checks, "Y", compare(g.y[r], row_block(ref.y, i * tl, tl), st, h));
      dz_of[r] = row_block(ref.dx, i * tl, tl);
    }
    if (p.backward) moe_check_weights(*moe_, moe, replica, ref, st, checks);
  }
  return dz_of;
}

std::vector<TensorCheck> TpSpEp::verify(LayerContext& ctx, Passes p) {
  const MPI_Comm c = ctx.ctrl();
  const Gathered g{gather_to_root(c, x_),    gather_to_root(c, wqkv_), gather_to_root(c, t2s_->weight()),
                   gather_to_root(c, dy_),   gather_to_root(c, y_),    gather_to_root(c, dx_),
                   gather_to_root(c, dwqkv_), gather_to_root(c, t2s_->weight_grad())};
  const MoeBlock::Gathered moe = moe_->gather(ctx);
  std::vector<TensorCheck> checks;
  if (ctx.world_rank() != 0) return checks;
  const ParallelConfig& config = ctx.config();
  const DataType st = ctx.storage();
  const std::size_t tl = shape_.tokens() / static_cast<std::size_t>(config.tp);

  // Dense forward per DP replica; each world rank's Z shard as float64.
  std::vector<RefDense> dense;
  std::vector<RefTensor> z_of(static_cast<std::size_t>(config.world));
  const std::vector<std::vector<int>> tp_groups = rank_groups(config, GroupKind::tp);
  for (const std::vector<int>& group : tp_groups) {
    dense.push_back(reference_dense(g, group));
    for (std::size_t i = 0; i < group.size(); ++i)
      z_of[static_cast<std::size_t>(group[i])] = row_block(dense.back().z, i * tl, tl);
  }
  const std::vector<RefTensor> dz_of = check_moe(g, moe, z_of, config, p, st, checks);
  for (std::size_t i = 0; i < tp_groups.size(); ++i) {
    std::vector<RefTensor> parts;
    for (int r : tp_groups[i]) parts.push_back(dz_of[static_cast<std::size_t>(r)]);
    check_dense(g, tp_groups[i], dense[i], concat_rows(parts), p, st, checks);
  }
  return checks;
}

}  // namespace

std::unique_ptr<Layer> make_tp_sp_ep() { return std::make_unique<TpSpEp>(); }

}  // namespace collscope::layers
