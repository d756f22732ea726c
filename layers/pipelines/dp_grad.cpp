// layer_dp_grad: data-parallel gradient synchronisation of a linear layer Y = X W, as
// DDP and Megatron do it (Li et al. 2020): allreduce SUM over the DP group, then divide by DP.
// With --tp > 1, W is column-parallel and each TP rank syncs its own shard over its DP
// group (ranks t, t + TP, t + 2 TP, ...: Megatron's strided DP groups).
//
//   T = S x B tokens per replica, H inputs, O outputs, o = O / TP; DP rank d, TP rank t:
//   X_d   [T, H]  replica d's micro-batch             W_t  [H, o]  columns t o .. of W
//   dY_dt [T, o]  its given output gradient, columns t o .. of dY_d
//
//   forward:  Y_dt  = X_d W_t           [T, o]   (local, no collective)
//   backward: G_dt  = X_d^T dY_dt       [H, o]   this replica's gradient
//             dW_t  = allreduce_d(G_dt) / DP     (1) the mean over the replicas
//
// (1) Every replica must apply the same update, the mean of the replicas' gradients
//     (DDP: all_reduce SUM, then divide by the DP size). The division is local: it
//     moves no bytes. The layer's input is data, so there is no dX.
// Volume: ring allreduce of [H, o] sends 2(DP-1)/DP x H o x elem per rank; the textbook
// figure (docs/textbook-formulas.md, dp-grad) counts "parameters x sizeof(dtype)" per step
// (textbook_figure below).
// Buckets (--buckets N, as DDP's gradient buckets): dW_t in N row blocks (uneven rule over
// H), bucket b = X_d[:, rows of b]^T dY_dt, each its own allreduce ("... bucket b/N"); with
// --overlap bucket b's allreduce runs on the DP group's stream while the later buckets'
// GEMMs compute. N = 1 is one allreduce of the whole dW_t, as above.
// Verification: each rank's dW_t against the float64 mean over d of X_d^T dY_dt on the
// gathered data; Y_dt against X_d W_t.
#include <cmath>

#include "collscope/errors.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/moe_routing.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kGradSite = "bwd dW allreduce dW [H,O/TP]";

struct Shape : TokenShape {
  std::int64_t out = 32, buckets = 1;
  std::size_t o() const { return static_cast<std::size_t>(out); }
  std::size_t n_buckets() const { return static_cast<std::size_t>(buckets); }
  // Bucket b: rows [first, first + rows) of dW.
  std::size_t bucket_first(std::size_t b) const { return even_block_start(h(), n_buckets(), b); }
  std::size_t bucket_rows(std::size_t b) const { return even_block_size(h(), n_buckets(), b); }
  std::string site(std::size_t b) const {
    if (buckets == 1) return kGradSite;
    return "bwd dW allreduce dW bucket " + std::to_string(b) + "/" + std::to_string(buckets) +
           " [H/N,O/TP]";
  }
};

class DpGrad final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_token_flags(app, shape_, "sequence length S (tokens per replica T = S x B)",
                    "input features H");
    app.add_option("-K,--out-features", shape_.out, "output features O, divisible by TP");
    app.add_option("--buckets", shape_.buckets,
                   "gradient buckets: dW in this many row blocks, each allreduced on its own "
                   "(with --overlap beside the later buckets' GEMMs); default 1");
  }
  void use_device_defaults(const CLI::App& app) override {
    token_device_defaults(app, shape_);
    device_default(app, "--out-features", shape_.out, 4 * kDeviceHidden);
  }
  LayerShape read_options() override {
    check_token_shape(shape_);
    require_at_least(shape_.out, 1, "--out-features");
    require_at_least(shape_.buckets, 1, "--buckets");
    if (shape_.buckets > shape_.hidden)
      throw UsageError("--buckets " + std::to_string(shape_.buckets) + " is more than the " +
                       std::to_string(shape_.hidden) + " rows of dW (H)");
    LayerShape s{.scheme = "dp", .dims = {.out_features = shape_.out}, .json = token_json(shape_)};
    s.json["O"] = shape_.out;
    s.json["buckets"] = shape_.buckets;
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig& c, Passes p) const override {
    if (!p.backward) return {};
    std::vector<PlannedCall> calls;
    for (std::size_t b = 0; b < shape_.n_buckets(); ++b)
      calls.push_back(planned_call(shape_.site(b), Collective::allreduce, GroupKind::dp,
                                   shape_.bucket_rows(b) * (shape_.o() / c.tp)));
    return calls;
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override {
    TextbookFigure s;
    s.source = "PyTorch DDP (Li et al. 2020) and Megatron data parallelism "
               "(docs/textbook-formulas.md, dp-grad)";
    s.formula = "parameters x sizeof(dtype) per step";
    s.elements = p.backward ? static_cast<double>(shape_.h() * (shape_.o() / c.tp)) : 0;
    s.bytes = s.elements * static_cast<double>(dtype_size(storage));
    s.explanation =
        "the figure takes one allreduce's traffic as the gradient's size; a ring rank sends "
        "2(DP-1)/DP of it (reduce-scatter, then all-gather): DP " +
        std::to_string(c.dp()) + " gives " + std::to_string(2 * (c.dp() - 1)) + "/" +
        std::to_string(c.dp()) + " of the figure (equal at DP 2, up to twice it as DP "
        "grows, nothing at DP 1)";
    return s;
  }

  void setup(LayerContext& ctx) override {
    const GroupPosition tp = ctx.position(GroupKind::tp);
    const int replica = ctx.replica();
    const std::size_t o = shape_.o() / tp.members.size();
    const std::size_t col0 = static_cast<std::size_t>(tp.position) * o;
    const DataType st = ctx.storage();
    Engine& e = ctx.engine();
    x_ = ctx.replica_input("X", shape_.tokens(), shape_.h());
    dy_ = ops::upload(e, make_block(ctx.seed(), {"dY", replica},
                                    {shape_.o(), 0, shape_.tokens(), col0, o}, 1.0f, st), st);
    w_ = ops::upload(e, make_block(ctx.seed(), {"W"}, {shape_.o(), 0, shape_.h(), col0, o},
                                   1.0f / std::sqrt(static_cast<float>(shape_.h())), st), st);
  }

  void forward(LayerContext& ctx) override {
    y_ = ops::matmul(x_, Trans::no, w_, Trans::no, ctx.storage());
  }

  // Every bucket's GEMM, each bucket's allreduce issued behind it; then the means.
  void backward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    const std::size_t nb = shape_.n_buckets();
    dw_.clear();
  dw_.resize(nb);
    std::vector<Ticket> reduced(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t r0 = shape_.bucket_first(b), rows = shape_.bucket_rows(b);
      dw_[b] = Array(ctx.engine(), rows, dy_.cols(), st);
      GemmCall g;  // X[:, r0 .. r0 + rows)^T dY
      g.a = ops::view(x_, 0, x_.rows(), r0, rows);
      g.ta = Trans::yes;
      g.b = ops::view(dy_);
      g.c = ops::span(dw_[b]);
      ctx.engine().run_gemm(g);
      reduced[b] = ctx.calls().allreduce(GroupKind::dp, shape_.site(b), dw_[b], ReduceOp::sum,
                                         Join::later);
    }
    for (std::size_t b = 0; b < nb; ++b) {
      ctx.calls().join(reduced[b]);
      ops::scale(dw_[b], 1.0f / static_cast<float>(ctx.config().dp()));
    }
  }

  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const MPI_Comm c = ctx.ctrl();
    std::vector<Tensor> buckets;
    for (const Array& b : dw_) buckets.push_back(ops::download(b));
    const Gathered g{gather_to_root(c, x_), gather_to_root(c, w_), gather_to_root(c, dy_),
                     gather_to_root(c, y_), gather_to_root(c, concat_rows(buckets))};
    return checks_per_group(ctx.world_rank(), ctx.config(), GroupKind::dp,
                            [&](const std::vector<int>& group, std::vector<TensorCheck>& checks) {
                              check_group(g, group, p, ctx.storage(), checks);
                            });
  }

 private:
  struct Gathered {
    std::vector<Tensor> x, w, dy, y, dw;  // by world rank
  };

  // The float64 mean over the DP group of each replica's gradient X_d^T dY_d.
  static RefTensor mean_gradient(const Gathered& g, const std::vector<int>& group) {
    RefTensor mean;
    for (int r : group) {
      const RefTensor grad = ref_matmul(to_ref(g.x[r]), Trans::yes, to_ref(g.dy[r]), Trans::no);
      if (mean.size() == 0) mean = grad;
      else ref_add(mean, grad);
    }
    ref_scale(mean, 1.0 / static_cast<double>(group.size()));
    return mean;
  }

  // One DP group (one shard of W, every replica): each rank's Y and its synced dW.
  void check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                   std::vector<TensorCheck>& checks) const {
    for (int r : group)
      if (p.forward)
        add_check(checks, "Y",
                  compare(g.y[r], ref_matmul(to_ref(g.x[r]), Trans::no, to_ref(g.w[r]), Trans::no),
                          st, shape_.h()));
    if (!p.backward) return;
    const RefTensor mean = mean_gradient(g, group);
    for (int r : group)
      add_check(checks, "dW", compare(g.dw[r], mean, st, shape_.tokens() * group.size()));
  }

  Shape shape_;
  Array x_, dy_, w_;  // this replica's data, this rank's weight shard
  Array y_;
  std::vector<Array> dw_;  // the buckets: row blocks of dW
};

}  // namespace

std::unique_ptr<Layer> make_dp_grad() { return std::make_unique<DpGrad>(); }

}  // namespace collscope::layers
