// layer_vocab_parallel: Megatron's vocab-parallel word embedding and vocab-parallel
// cross-entropy (Shoeybi et al. 2019, section 3) on one TP group of N ranks (and DP =
// world / N replicas, each with its own micro-batch), with the embedding table tied
// between the input lookup and the output projection (Megatron-LM: the input and output
// layers share one word embedding; its gradient is the sum of both uses).
//
//   T = S x B tokens, H hidden, V vocabulary, v = V / N rows per rank; TP rank t holds
//   ids [T], targets [T] in [0, V), replicated (a function of seed, replica, token)
//   E_t  [v, H]  rows t v .. (t+1) v - 1 of the table E [V, H]
//   Hd   [T, H]  the last hidden states, replicated (input of the output layer)
//   dY   [T, H]  replicated (given gradient of the embedding output)
//
//   forward
//   Y_t[i]   = E_t[ids_i - t v] if t v <= ids_i < (t+1) v, else 0  [T, H] masked lookup
//   Y        = allreduce_t Y_t                     SUM [T, H]  storage dtype  <- (1)
//   L_t      = Hd E_t^T                                [T, v]  logits, vocab-parallel
//   m        = allreduce_t max_j L_t[i, j]             MAX [T] float32        <- (2)
//   z        = allreduce_t L_t[i, targets_i - t v]     SUM [T] float32        <- (3)
//              (the rank holding the target's row gives it, the others 0)
//   s        = allreduce_t sum_j exp(L_t[i, j] - m_i)  SUM [T] float32        <- (4)
//   loss_i   = log s_i + m_i - z_i                         [T]     float32, every rank
//
//   backward (of the mean loss over the T tokens; no collective)
//   dL_t     = (exp(L_t - m) / s - onehot_t(targets)) / T          [T, v]  local
//   dE_t     = dL_t^T Hd  +  sum over tokens i with ids_i in t's rows of dY[i] into row
//              ids_i - t v                                         [v, H]  local
//
// (1) Each token's row lives on exactly one rank; the others contribute zeros, so the
//     SUM assembles the lookup (look up, zero what is not found, allreduce).
// (2)-(4) Softmax over the vocabulary without gathering the [T, V] logits (Megatron's
//     point: an all-gather would move b s v): per token, the global max (for a stable
//     exp), the target's logit and the sum of exponentials, three allreduces of [T].
//     They travel in float32 even under --dtype bfloat16 (Megatron's cross-entropy
//     casts the logits to float32 before these reductions); the exact theory uses 4 B.
// The backward needs nothing global: m and s are on every rank, each rank's dL_t only
// touches its own rows. dHd (the gradient into the transformer, partial [T, H] per rank,
// an allreduce in Megatron's column-parallel output layer) is not part of this layer.
// Volume: ring allreduce of [T, H] x elem, then 3 ring allreduces of [T] x 4 B.
// The textbook figure (docs/textbook-formulas.md, vocab-parallel): the embedding allreduce
// as 2 Phi, the cross-entropy as b s (the sum of exponentials) + N (a scalar loss per GPU)
// (textbook_figure below).
// Verification: Y and loss from every rank; dE assembled from the shards; against the
// float64 lookup, log-softmax and gradient on the gathered ids, targets, E, Hd, dY.
#include <algorithm>
#include <cmath>
#include <limits>

#include "collscope/errors.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"
#include "collscope/layers/pipelines/shape_flags.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kEmbedSite = "fwd embedding allreduce Y [T,H]";
constexpr const char* kMaxSite = "fwd CE allreduce max [T]";
constexpr const char* kTargetSite = "fwd CE allreduce tgt-logit [T]";
constexpr const char* kSumExpSite = "fwd CE allreduce sum-exp [T]";

constexpr std::int64_t kDeviceVocab = 32768;  // -m device (divisible by 1, 2, 4, 8)

struct Shape : TokenShape {
  std::int64_t vocab = 64;
  std::size_t v() const { return static_cast<std::size_t>(vocab); }
};

// Token ids (and targets): uniform in [0, V), a function of (seed, name, replica, token).
Tensor make_ids(std::uint64_t seed, TensorId id, std::size_t tokens, std::size_t vocab) {
  Tensor t(tokens, 1);
  for (std::size_t i = 0; i < tokens; ++i) {
    const double unit = (static_cast<double>(data_value(seed, id, i, 1.0f)) + 1.0) / 2.0;
    const auto drawn = static_cast<std::size_t>(unit * static_cast<double>(vocab));
    t.data[i] = static_cast<float>(std::min(vocab - 1, drawn));
  }
  return t;
}

std::size_t index_of(float id) { return static_cast<std::size_t>(id); }

std::vector<std::int32_t> as_int32(const Tensor& ids) {
  std::vector<std::int32_t> v(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) v[i] = static_cast<std::int32_t>(ids.data[i]);
  return v;
}

// For each of the shard's v rows, the tokens whose id is that row, in token order
// (compressed rows: row r's tokens are index[ptr[r] .. ptr[r+1] - 1]): the embedding's
// gradient adds their dY rows in that order.
struct TokensByRow {
  std::vector<std::int32_t> ptr, index;
};

TokensByRow tokens_by_row(const Tensor& ids, std::size_t row0, std::size_t v) {
  TokensByRow t;
  t.ptr.assign(v + 1, 0);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (const std::size_t r = index_of(ids.data[i]) - row0; r < v) ++t.ptr[r + 1];
  for (std::size_t r = 0; r < v; ++r) t.ptr[r + 1] += t.ptr[r];
  t.index.resize(static_cast<std::size_t>(t.ptr[v]));
  std::vector<std::int32_t> at(t.ptr.begin(), t.ptr.end() - 1);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (const std::size_t r = index_of(ids.data[i]) - row0; r < v)
      t.index[static_cast<std::size_t>(at[r]++)] = static_cast<std::int32_t>(i);
  return t;
}

// The float64 layer on whole tensors.
struct Reference {
  RefTensor y, loss, de;
};

Reference reference_vocab(const RefTensor& ids, const RefTensor& targets, const RefTensor& e,
                          const RefTensor& hd, const RefTensor& dy) {
  const std::size_t t = ids.rows, h = e.cols, vocab = e.rows;
  Reference r{RefTensor(t, h), RefTensor(t, 1), RefTensor(vocab, h)};
  const RefTensor logits = ref_matmul(hd, Trans::no, e, Trans::yes);  // [T, V]
  RefTensor dlogits(t, vocab);
  for (std::size_t i = 0; i < t; ++i) {
    const std::size_t id = static_cast<std::size_t>(ids.data[i]);
    const std::size_t target = static_cast<std::size_t>(targets.data[i]);
    for (std::size_t c = 0; c < h; ++c) {
      r.y.at(i, c) = e.at(id, c);
      r.de.at(id, c) += dy.at(i, c);
    }
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::size_t j = 0; j < vocab; ++j) mx = std::max(mx, logits.at(i, j));
    for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(logits.at(i, j) - mx);
    r.loss.data[i] = std::log(sum) + mx - logits.at(i, target);
    for (std::size_t j = 0; j < vocab; ++j)
      dlogits.at(i, j) = (std::exp(logits.at(i, j) - mx) / sum - (j == target ? 1.0 : 0.0)) /
                         static_cast<double>(t);
  }
  ref_add(r.de, ref_matmul(dlogits, Trans::yes, hd, Trans::no));
  return r;
}

class VocabParallel final : public Layer {
 public:
  void add_options(CLI::App& app) override {
    add_token_flags(app, shape_, "sequence length S (tokens T = S x B)");
    app.add_option("-V,--vocab", shape_.vocab, "vocabulary size V, divisible by TP");
  }
  void use_device_defaults(const CLI::App& app) override {
    token_device_defaults(app, shape_);
    device_default(app, "--vocab", shape_.vocab, kDeviceVocab);
  }
  LayerShape read_options() override {
    check_token_shape(shape_);
    require_at_least(shape_.vocab, 1, "--vocab");
    if (shape_.vocab >= (std::int64_t{1} << 24))
      throw UsageError("--vocab must be below 2^24 (token ids are kept as exact floats)");
    LayerShape s{.scheme = "tp", .dims = {.vocab = shape_.vocab}, .json = token_json(shape_)};
    s.json["V"] = shape_.vocab;
    s.json["tied"] = true;
    return s;
  }

  std::vector<PlannedCall> plan(const ParallelConfig&, Passes p) const override {
    const std::size_t t = shape_.tokens();
    if (!p.forward) return {};  // the backward moves nothing
    constexpr DataType f32 = DataType::float32;
    return {planned_call(kEmbedSite, Collective::allreduce, GroupKind::tp, t * shape_.h()),
            planned_call(kMaxSite, Collective::allreduce, GroupKind::tp, t, f32, ReduceOp::max),
            planned_call(kTargetSite, Collective::allreduce, GroupKind::tp, t, f32, ReduceOp::sum),
            planned_call(kSumExpSite, Collective::allreduce, GroupKind::tp, t, f32, ReduceOp::sum)};
  }

  TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                 DataType storage) const override {
    const double t = static_cast<double>(shape_.tokens()), th = t * static_cast<double>(shape_.h());
    TextbookFigure s;
    s.source = "Shoeybi et al. 2019 (Megatron-LM), section 3: vocab-parallel embedding and "
               "cross-entropy (docs/textbook-formulas.md, vocab-parallel)";
    s.formula = "embedding AllReduce 2 Phi (Phi = b x s x h) + cross-entropy b x s + N "
                "(sum(e) per row, then the scalar loss of each of N GPUs); backward none";
    if (p.forward) {
      s.elements = 2 * th + t + c.tp;
      s.bytes = 2 * th * static_cast<double>(dtype_size(storage)) + (t + c.tp) * 4.0;
    }
    s.explanation =
        "the embedding allreduce differs as in layer_tp_mlp: a ring rank sends (TP-1)/TP of "
        "the figure's 2 Phi, in bytes of the storage dtype; for the cross-entropy the figure "
        "counts one allreduce of the sum of exponentials as b s (not 2(TP-1)/TP x b s) and "
        "adds a scalar loss allreduce of N, while Megatron (and this layer) makes three "
        "float32 allreduces of [b s]: the max (for a stable exp, which the figure leaves out), "
        "the target's logit and the sum of exponentials, and leaves the loss per token on "
        "every rank (no scalar allreduce): 3 x 2(TP-1)/TP x b s x 4 B; bytes of the "
        "figure: its elements at the storage size for 2 Phi, 4 B for b s + N";
    return s;
  }

  void setup(LayerContext& ctx) override {
    const GroupPosition tp = ctx.position(GroupKind::tp);
    const int replica = ctx.replica();
    const std::size_t t = shape_.tokens(), h = shape_.h(), v = shape_.v() / tp.members.size();
    const DataType st = ctx.storage();
    Engine& e = ctx.engine();
    row0_ = static_cast<std::size_t>(tp.position) * v;
    ids_ = make_ids(ctx.seed(), {"ids", replica}, t, shape_.v());
    targets_ = make_ids(ctx.seed(), {"targets", replica}, t, shape_.v());
    ids_d_ = ops::upload_int32(e, as_int32(ids_));
    targets_d_ = ops::upload_int32(e, as_int32(targets_));
    const TokensByRow rows = tokens_by_row(ids_, row0_, v);
    row_ptr_ = ops::upload_int32(e, rows.ptr);
    row_tokens_ = ops::upload_int32(e, rows.index);
    hd_ = ctx.replica_input("Hd", t, h);
    dy_ = ctx.replica_input("dY", t, h);
    e_ = ops::upload(e, make_block(ctx.seed(), {"E"}, {h, row0_, v, 0, h},
                                   1.0f / std::sqrt(static_cast<float>(h)), st), st);
  }

  void forward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    Engine& e = ctx.engine();
    Kernels& k = e.kernels();
    const std::size_t t = shape_.tokens(), h = shape_.h(), v = e_.rows();
    constexpr DataType f32 = DataType::float32;
    y_ = Array(e, t, h, st);
    k.embedding_lookup({y_.data(), st}, {e_.data(), st}, ids_d_.as<std::int32_t>(), row0_, v, t,
                       h, e.stream());
    ctx.calls().allreduce(GroupKind::tp, kEmbedSite, y_);

    logits_ = ops::matmul(hd_, Trans::no, e_, Trans::yes, st);  // [T, v]
    max_ = Array(e, t, 1, f32);
    k.row_max(max_.as<float>(), {logits_.data(), st}, t, v, e.stream());
    ctx.calls().allreduce(GroupKind::tp, kMaxSite, max_, ReduceOp::max);
    Array target(e, t, 1, f32);
    k.pick(target.as<float>(), {logits_.data(), st}, targets_d_.as<std::int32_t>(), row0_, t, v,
           e.stream());
    ctx.calls().allreduce(GroupKind::tp, kTargetSite, target);
    sumexp_ = Array(e, t, 1, f32);
    k.row_sum_exp(sumexp_.as<float>(), {logits_.data(), st}, max_.as<float>(), t, v, e.stream());
    ctx.calls().allreduce(GroupKind::tp, kSumExpSite, sumexp_);
    loss_ = Array(e, t, 1, f32);
    k.cross_entropy_loss(loss_.as<float>(), sumexp_.as<float>(), max_.as<float>(),
                         target.as<float>(), t, e.stream());
  }

  void backward(LayerContext& ctx) override {
    const DataType st = ctx.storage();
    Engine& e = ctx.engine();
    const std::size_t t = shape_.tokens(), h = shape_.h(), v = e_.rows();
    Array dlogits(e, t, v, st);
    e.kernels().cross_entropy_grad({dlogits.data(), st}, {logits_.data(), st}, max_.as<float>(),
                                   sumexp_.as<float>(), targets_d_.as<std::int32_t>(), row0_, t,
                                   v, 1.0f / static_cast<float>(t), e.stream());
    Array de = ops::matmul(dlogits, Trans::yes, hd_, Trans::no, DataType::float32);  // [v, H]
    e.kernels().add_rows_csr(de.as<float>(), {dy_.data(), st}, row_ptr_.as<std::int32_t>(),
                             row_tokens_.as<std::int32_t>(), v, h, e.stream());
    de_ = ops::cast(de, st);  // one rounding of the sum of both uses
  }

  std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) override {
    const MPI_Comm c = ctx.ctrl();
    const Gathered g{gather_to_root(c, ids_), gather_to_root(c, targets_), gather_to_root(c, e_),
                     gather_to_root(c, hd_),  gather_to_root(c, dy_),      gather_to_root(c, y_),
                     gather_to_root(c, loss_), gather_to_root(c, de_)};
    return checks_per_group(ctx.world_rank(), ctx.config(), GroupKind::tp,
                            [&](const std::vector<int>& group, std::vector<TensorCheck>& checks) {
                              check_group(g, group, p, ctx.storage(), checks);
                            });
  }

 private:
  struct Gathered {
    std::vector<Tensor> ids, targets, e, hd, dy, y, loss, de;  // by world rank
  };

  // One TP group: its replica's reference against what each of its ranks holds. The
  // longest sums: the loss over V logits, dE over the T tokens.
  void check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                   std::vector<TensorCheck>& checks) const {
    const std::size_t lead = static_cast<std::size_t>(group.front());
    const Reference ref = reference_vocab(to_ref(g.ids[lead]), to_ref(g.targets[lead]),
                                          concat_rows(ref_parts(g.e, group)), to_ref(g.hd[lead]),
                                          to_ref(g.dy[lead]));
    for (int r : group) {
      if (!p.forward) break;
      add_check(checks, "Y", compare(g.y[r], ref.y, st, 1));
      add_check(checks, "loss", compare(g.loss[r], ref.loss, st, shape_.v()));
    }
    if (p.backward)
      add_check(checks, "dE", compare(concat_rows(parts_of(g.de, group)), ref.de, st,
                                      shape_.tokens()));
  }

  Shape shape_;
  std::size_t row0_ = 0;             // first vocabulary row of this rank's shard
  Tensor ids_, targets_;             // token ids as floats (the verification gathers them)
  Array ids_d_, targets_d_;          // ... as int32 for the kernels
  Array row_ptr_, row_tokens_;       // tokens_by_row of the shard
  Array hd_, dy_, e_;                // inputs and the table shard
  Array y_, logits_, loss_;          // forward: embedding output, saved logits, loss
  Array max_, sumexp_;               // forward: per-token global max and sum of exp
  Array de_;                         // backward
};

}  // namespace

std::unique_ptr<Layer> make_vocab_parallel() { return std::make_unique<VocabParallel>(); }

}  // namespace collscope::layers
