// pipelines/tp_to_sp_switch.cpp, binary layer_tp_to_sp: the TP -> SP layout switch alone;
// it wraps blocks/tp_to_sp_switch_block.cpp; not the TP + SP transformer layer
// (pipelines/tp_sp_transformer_layer.cpp).
//
// layer_tp_to_sp: the transition from tensor to sequence parallelism
// (docs/textbook-formulas.md, tp-to-sp) on its own: the output projection out_linear, Z =
// Y W, on one TP group of N ranks (and DP = world / N replicas, each with its own
// micro-batch), its input Y H-sharded as a column-parallel layer leaves it, its output Z
// sequence-sharded for an SP layer.
//
//   T = S x B tokens (row s B + b: sequence-major, so a sequence shard of S/N is the row
//   block of T/N rows), K input width (--k, default H), H output width; TP rank t holds
//   Y_t  [T, K/N]  columns t K/N .. of Y [T, K]    (generated input "Y", per replica)
//   dZ_t [T/N, H]  rows    t T/N .. of dZ [T, H]   (given gradient "dZ", per replica)
//   W: rows t K/N .. of W [K, H] (--scheme allreduce, reduce_scatter) or all of it (alltoall)
//   output Z_t [T/N, H] = rows t T/N .. of Z = Y W;  dY_t [T, K/N];  dW
//
// The math, per scheme, is tp_to_sp_switch_block.cpp's (TpToSpBlock, shared with
// layer_tp_sp_ep). Collectives, all on TP (e = element size, D = T H e):
//
//   --scheme        forward                                 backward
//   allreduce       allreduce Z partial [T,H]: 2(N-1)/N D    allgather dZ [T,H]: (N-1)/N D
//   reduce_scatter  reduce-scatter Z partial: (N-1)/N D      allgather dZ [T,H]: (N-1)/N D
//   alltoall        all-to-all Y, (T/N)(K/N) per peer:       all-to-all dY: the same;
//                   (N-1) (T/N)(K/N) e                       allreduce dW [K,H]: 2(N-1)/N K H e
//
// (bytes each rank sends, ring and pairwise schedules; T and K divisible by N: no uneven
// blocks). With K = H, forward, the all-to-all sends 1/(2N) of the allreduce scheme and
// 1/N of the reduce-scatter: the textbook figure says 1/N of the allreduce, because it
// takes the ring allreduce's send + receive for 2(N-1)/N D when that is what it sends
// alone (docs/textbook-formulas.md, tp-to-sp; textbook_figure below).
// Layout checks before any communication: S divisible by TP (sequence parallelism, the
// driver's), K divisible by TP (plan() below).
// Verification, per TP group (replica): Z and dY from every rank, dW assembled from the
// shards (or every rank's copy under alltoall), against the float64 Z = Y W,
// dY = dZ W^T, dW = Y^T dZ on the gathered Y, dZ and W.
#include <cstdio>
#include <optional>

#include "collscope/errors.hpp"
#include "collscope/layers/blocks/tp_to_sp_switch_block.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kSitePrefix = "out_linear ";
constexpr const char* kWeightName = "W";

struct Shape : TokenShape {
  std::int64_t k = 0;  // 0: hidden
  std::string scheme_name = "allreduce";  // --scheme, read into TpToSp::scheme_
  std::size_t k_width() const { return static_cast<std::size_t>(k > 0 ? k : hidden); }
  TpToSpShape block_shape(int tp) const { return {tokens(), k_width(), h(), tp}; }
};

std::string text(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.6g", v);
  return s;
}

class TpToSp final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_token_flags(app, shape_, "sequence length S (tokens T = S x B), divisible by TP",
                    "output width H of out_linear");
    app.add_option("-K,--k", shape_.k, "input width K of out_linear (default H), divisible by TP");
    app.add_option("--scheme", shape_.scheme_name, "allreduce, reduce_scatter or alltoall");
  }
  void use_device_defaults(const CLI::App& app) override { token_device_defaults(app, shape_); }
  LayerShape read_options() override {
    check_token_shape(shape_);
    require_at_least(shape_.k, 0, "--k");
    scheme_ = parse_tp_to_sp_scheme(shape_.scheme_name);
    return {.scheme = std::string(tp_to_sp_scheme_name(scheme_)),
            .dims = {.sequence = shape_.seq},  // by TP: sequence parallelism
            .json = {{"S", shape_.seq},
                     {"B", shape_.batch},
                     {"T", shape_.tokens()},
                     {"K", shape_.k_width()},
                     {"H", shape_.hidden}}};
  }

  // Called by the driver before any communication: K by TP is checked here (ModelDims
  // has no field for an input width split by TP).
  std::vector<PlannedCall> plan(const ParallelConfig& c, Passes p) const override {
    if (shape_.k_width() % static_cast<std::size_t>(c.tp) != 0)
      throw UsageError("input width K " + std::to_string(shape_.k_width()) +
                       " (--k) is not divisible by TP " + std::to_string(c.tp) +
                       " (each rank holds K/TP columns of Y)");
    return block(c.tp).plan(p);
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override;

  void setup(LayerContext& ctx) override {
    const GroupPosition tp = ctx.position(GroupKind::tp);
    const int replica = ctx.replica();
    const std::size_t n = tp.members.size(), t = static_cast<std::size_t>(tp.position);
    const std::size_t rows = shape_.tokens() / n, k = shape_.k_width() / n;
    const DataType st = ctx.storage();
    y_ = ops::upload(ctx.engine(),
                     make_block(ctx.seed(), {"Y", replica},
                                {shape_.k_width(), 0, shape_.tokens(), t * k, k}, 1.0f, st),
                     st);
    dz_ = ops::upload(ctx.engine(),
                      make_block(ctx.seed(), {"dZ", replica},
                                 {shape_.h(), t * rows, rows, 0, shape_.h()}, 1.0f, st),
                      st);
    block_.emplace(block(static_cast<int>(n)));
    block_->setup(ctx, kWeightName);
  }

  void forward(LayerContext& ctx) override { z_ = block_->forward(ctx, y_); }
  void backward(LayerContext& ctx) override { dy_ = block_->backward(ctx, dz_); }

  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const MPI_Comm c = ctx.ctrl();
    const Gathered g{gather_to_root(c, y_),  gather_to_root(c, dz_),
                     gather_to_root(c, block_->weight()), gather_to_root(c, z_),
                     gather_to_root(c, dy_), gather_to_root(c, block_->weight_grad())};
    return checks_per_group(ctx.world_rank(), ctx.config(), GroupKind::tp,
                            [&](const std::vector<int>& group, std::vector<TensorCheck>& checks) {
                              check_group(g, group, p, ctx.storage(), checks);
                            });
  }

 private:
  struct Gathered {
    std::vector<Tensor> y, dz, w, z, dy, dw;  // by world rank
  };
  struct Ref {
    RefTensor z, dy, dw;  // the whole [T,H], [T,K], [K,H]
  };

  TpToSpBlock block(int tp) const {
    return TpToSpBlock(scheme_, shape_.block_shape(tp), kSitePrefix);
  }

  Ref reference(const Gathered& g, const std::vector<int>& group) const {
    const RefTensor y = concat_columns(ref_parts(g.y, group));
    const RefTensor dz = concat_rows(ref_parts(g.dz, group));
    const RefTensor w = block_->whole_weight(g.w, group);
    return {ref_matmul(y, Trans::no, w, Trans::no), ref_matmul(dz, Trans::no, w, Trans::yes),
            ref_matmul(y, Trans::yes, dz, Trans::no)};
  }

  // One TP group: its replica's reference against what each of its ranks holds.
  void check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                   std::vector<TensorCheck>& checks) const {
    const Ref ref = reference(g, group);
    const std::size_t n = group.size(), t = shape_.tokens(), k = shape_.k_width();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t r = static_cast<std::size_t>(group[i]);
      if (p.forward) add_check(checks, "Z", compare(g.z[r], row_block(ref.z, i * t / n, t / n), st, k));
      if (p.backward)
        add_check(checks, "dY", compare(g.dy[r], column_block(ref.dy, i * k / n, k / n), st, shape_.h()));
    }
    if (!p.backward) return;
    add_check(checks, "dW", compare_whole(block_->whole_weight_grad(g.dw, group), ref.dw, st, t));
    if (scheme_ == TpToSpScheme::alltoall)  // every rank's copy of the summed dW
      for (int r : group) add_check(checks, "dW", compare(g.dw[static_cast<std::size_t>(r)], ref.dw, st, t));
  }

  static ErrorStats compare_whole(const RefTensor& got, const RefTensor& ref, DataType st,
                                  std::size_t length) {
    Tensor f(got.rows, got.cols);
    for (std::size_t i = 0; i < got.size(); ++i) f.data[i] = static_cast<float>(got.data[i]);
    return compare(f, ref, st, length);
  }

  Shape shape_;
  TpToSpScheme scheme_ = TpToSpScheme::allreduce;  // read from shape_.scheme_name
  std::optional<TpToSpBlock> block_;  // setup: the scheme's block at this TP size
  Array y_, dz_;                      // inputs (this rank's shards)
  Array z_, dy_;                      // forward's output, backward's input gradient
};

// The textbook figures (docs/textbook-formulas.md, tp-to-sp) count the forward only, per
// GPU, as send + receive:
//   allreduce scheme:   V1 = 2 (N-1)/N   x S Hdim d   (Z [S, Hdim] = [T, H])
//   all-to-all scheme:  V2 = 2 (N-1)/N^2 x S Hdim d   (Y [S, Hdim] = [T, K])
// and concludes V2 = V1 / N.
TextbookFigure TpToSp::textbook_figure(const ParallelConfig& c, Passes p,
                                       DataType storage) const {
  const double n = c.tp, t = static_cast<double>(shape_.tokens());
  const double h = static_cast<double>(shape_.h()), k = static_cast<double>(shape_.k_width());
  const bool all2all = scheme_ == TpToSpScheme::alltoall;
  const std::string ratio = "against the ring allreduce the all-to-all (K = H) moves 1/(2N) = 1/" +
                            text(2 * n) + ", against the reduce-scatter 1/N = 1/" + text(n) +
                            ", not V2 = V1/N as the figures conclude (docs/textbook-formulas.md, tp-to-sp)";
  TextbookFigure s;
  s.source = std::string(all2all ? "V2, the all-to-all scheme (DeepSpeed-Ulysses' layout switch)"
                                 : "V1, the allreduce scheme") +
             " (docs/textbook-formulas.md, tp-to-sp; forward only)";
  s.formula = all2all ? "V2 = 2 (N-1)/N^2 x S Hdim d, S = T, Hdim = K (send + receive)"
                      : "V1 = 2 (N-1)/N x S Hdim d, S = T, Hdim = H (send + receive)";
  s.elements = p.forward ? (all2all ? 2 * (n - 1) / (n * n) * t * k : 2 * (n - 1) / n * t * h) : 0;
  s.bytes = s.elements * static_cast<double>(dtype_size(storage));
  if (all2all)
    s.explanation =
        "V2 is send + receive; a rank sends half of it, (N-1)/N^2 T K d (exact forward / figure "
        "= 0.5); V1 takes the ring allreduce's send + receive as 2(N-1)/N D, but "
        "a ring allreduce (reduce-scatter then allgather) sends 2(N-1)/N D alone, so " + ratio;
  else if (scheme_ == TpToSpScheme::allreduce)
    s.explanation =
        "V1 is meant as send + receive, taking the ring allreduce to send (N-1)/N D; it is a "
        "reduce-scatter then an allgather and sends 2(N-1)/N D alone (send + receive 4(N-1)/N "
        "D), so the exact forward sent bytes equal the whole V1 (ratio 1) and " + ratio;
  else
    s.explanation =
        "the figures have no reduce-scatter: the allreduce scheme allreduces Z and slices "
        "it (V1, meant as send + receive); the reduce-scatter gives each rank only its rows "
        "and sends (N-1)/N D, half of what the ring allreduce sends, 2(N-1)/N D = V1 (so "
        "exact forward / figure = 0.5); " + ratio;
  if (p.backward)
    s.explanation += "; the figures count no backward: " +
                     std::string(all2all ? "the all-to-all back (as forward) and the allreduce "
                                           "of the replicated W's gradient dW [K,H]"
                                         : "the allgather of dZ [T,H], (N-1)/N D") +
                     " come on top";
  return s;
}

}  // namespace

std::unique_ptr<Layer> make_tp_to_sp() { return std::make_unique<TpToSp>(); }

}  // namespace collscope::layers
