// The expert-parallel MoE block (GShard, Switch Transformer, DeepSpeed-MoE, Megatron-Core's
// token dispatcher; docs/textbook-formulas.md, moe-dispatch-combine and moe-etp).
//
// Layout (groups.hpp, Megatron's expert generator): rank = etp + ETP (ep + EP (edp ...)).
// Every rank holds its own T tokens X [T, H] (as after sequence parallelism) and dY.
// E experts, top-k, F the expert FFN size; EP rank p owns experts [p E/EP, (p+1) E/EP).
//
// Forward, per rank (e = element size, R = rows = kept (token, slot) assignments):
//   logits = X Wr + bias [T, E] (Wr [H, E] replicated; bias: moe_routing.hpp)
//   route: top-k, gates, capacity drop, permute by expert (moe_routing.hpp)
//   (1) allgather over EP of the per-expert counts [E] int64 (Megatron's gather of
//       tokens_per_expert): every rank knows the EP group's N x N split matrix;
//       ETP > 1: (1b) allgather over ETP of that [EP, E]: the whole expert group's counts
//   (2) dispatch: alltoallv over EP (at each etp position) of the permuted rows of X;
//       split s[i][j] = rows rank i routes to experts of rank j, x H
//   experts: each local expert's rows through W1 [H, F], GeLU, W2 [F, H] (grouped GEMM)
//   (3) combine: alltoallv back (the transposed split matrix)
//   Y[t] = sum_j gate[t, j] O[t, j] over the kept slots (dropped slots add 0)
// Backward from dY:
//   dO[t, j] = gate dY[t]; (4) alltoallv as dispatch; experts' backward (dW1, dW2 per
//   expert, dX rows); (5) alltoallv as combine; dgate[t, j] = dY[t] . O[t, j];
//   dlogits through the softmax (moe_routing.hpp); dWr = X^T dlogits, partial per rank
//   (Wr is replicated: its gradient is summed in the DP / EDP gradient sync, layer_dp_grad;
//   the verification checks the sum over the expert group); dX = sum_j dXe[t, j] +
//   dlogits Wr^T. No auxiliary (load-balancing) loss.
//
// ETP > 1, --etp-scheme allgather (the all-gather / reduce-scatter scheme, Megatron's;
// docs/textbook-formulas.md, moe-etp): W1 column-sharded and
// W2 row-sharded over ETP (f = F / ETP columns each); the dispatch runs at every etp
// position; then (2b) the received rows are all-gathered within ETP, the sharded FFN
// gives partial outputs of every row of the group, and (3a) a reduce-scatter returns each
// rank the sum for its own rows; then the combine. Backward: (4b) all-gather of the dO
// rows, sharded backward (dX partial), (5a) reduce-scatter of the dX rows. The row
// counts differ per ETP rank (R_t), as in Megatron's gather with output_split_sizes;
// these v-collectives are run as all-to-all-v over ETP, so their counts can come from the
// data (the driver plans fixed counts for allgather / reduce_scatter): allgather-v
// s[i][j] = R_i H (each rank sends its rows to every other one), reduce-scatter-v
// s[i][j] = R_j H (each rank sends rank j its partial of j's rows; j sums the ETP parts
// locally). No padding: rank t sends (ETP-1) R_t H e in the allgather and
// (R_group - R_t) H e in the reduce-scatter: the exact direct allgather-v /
// reduce-scatter-v volume (the textbook figure: (ETP-1)/ETP x D each, D = the group's rows
// x H x e, even rows).
//
// ETP > 1, --etp-scheme scatter_gather (the scatter / gather scheme; docs/textbook-formulas.md,
// moe-etp): a main device scatters the tokens over the expert's "TP" devices and gathers
// their outputs. That is only correct if every device holds the whole expert (it computes
// on 1/ETP of the rows): it is data parallelism inside the expert group, not tensor
// parallelism, which the scheme is written up as. So here
// the experts are replicated over ETP. Flow: the dispatch at every etp position leaves
// R_t rows at ETP rank t; (2b) "scatter": the group's rows (concatenated in etp order)
// are redistributed in even blocks (block j: R/ETP + (j < R%ETP) rows), which is where
// the scheme's scatter from its main device leaves them, but from where the rows already
// are: an all-to-all-v with s[i][j] = overlap of i's rows with block j; experts compute
// their block; (3a) "gather": the transposed all-to-all-v returns each rank its own rows
// (every rank's tokens end with their own output); combine. Why not the scheme's main
// device: every rank holds its own tokens and the group-wise dispatch already spreads
// the rows over the ETP ranks, so gathering them onto one rank just to scatter them again
// would add (ETP-1)/ETP of the rows twice per pass. Here only the routing imbalance moves:
// rank t sends its rows outside block t, nothing when the rows are balanced
// (uniform routing); the textbook figure is (ETP-1)/ETP x D per scatter and
// per gather, at the main device.
// Backward mirrors it (scatter of dO, gather of dX), and the replicated experts' weight
// gradients are summed over ETP: (6) allreduce over ETP of local x 2 H F elements
// (counted; the verification checks every ETP copy).
//
// Volume (exact, per rank, per call; self-parts are not sent): the all-to-all-v sites
// send what their split matrix's row holds off the diagonal (driver: theory from each
// rank's matrix); uniform routing with T k divisible by E at ETP 1: (EP-1)/EP x T k H e
// per dispatch or combine. The textbook figure (docs/textbook-formulas.md,
// moe-dispatch-combine): 2 b s k h bytes per all-to-all (half precision), 4 b s k h
// forward, taking the (EP-1)/EP as 1 (moe.cpp's textbook_figure).
//
// Identity experts (--identity-experts): an expert returns its input (no weights); under
// the sharded scheme only ETP rank 0 returns it (the others 0), so the reduce-scatter
// sums it exactly. With topk 1 and topk_softmax the gate is exactly 1: Y == X bit for bit.
#include "collscope/layers/blocks/moe_block.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "collscope/errors.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kCounts = "fwd counts allgather tokens_per_expert [EP,E] int64";
constexpr const char* kCountsEtp = "fwd counts allgather over ETP [ETP,EP,E] int64";
constexpr const char* kDispatch = "fwd dispatch alltoallv X rows";
constexpr const char* kEtpGatherF = "fwd etp allgatherv rows (alltoallv)";
constexpr const char* kEtpReduceF = "fwd etp reduce_scatterv O rows (alltoallv)";
constexpr const char* kEtpScatterF = "fwd etp scatter rows (alltoallv)";
constexpr const char* kEtpCollectF = "fwd etp gather O rows (alltoallv)";
constexpr const char* kCombine = "fwd combine alltoallv O rows";
constexpr const char* kCombineB = "bwd combine alltoallv dO rows";
constexpr const char* kEtpGatherB = "bwd etp allgatherv dO rows (alltoallv)";
constexpr const char* kEtpReduceB = "bwd etp reduce_scatterv dX rows (alltoallv)";
constexpr const char* kEtpScatterB = "bwd etp scatter dO rows (alltoallv)";
constexpr const char* kEtpCollectB = "bwd etp gather dX rows (alltoallv)";
constexpr const char* kEtpGrads = "bwd etp allreduce expert grads [local,2HF]";
constexpr const char* kDispatchB = "bwd dispatch alltoallv dX rows";


std::size_t rows_of(const std::vector<std::uint64_t>& splits, std::size_t n, std::size_t me,
                    std::size_t h, bool column) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += column ? splits[i * n + me] : splits[me * n + i];
  return static_cast<std::size_t>(sum / h);
}

template <class T>
void copy_row(const Matrix<T>& from, std::size_t r, Matrix<T>& to, std::size_t s) {
  std::copy_n(from.data.begin() + static_cast<std::ptrdiff_t>(r * from.cols), from.cols,
              to.data.begin() + static_cast<std::ptrdiff_t>(s * to.cols));
}

Tensor rows_at(const Tensor& buf, const std::vector<RowSpan>& spans) {
  std::size_t n = 0;
  for (const RowSpan& s : spans) n += s.rows;
  Tensor out(n, buf.cols);
  std::size_t at = 0;
  for (const RowSpan& s : spans)
    for (std::size_t r = 0; r < s.rows; ++r) copy_row(buf, s.offset + r, out, at++);
  return out;
}

void put_rows(const Tensor& rows, const std::vector<RowSpan>& spans, Tensor& buf) {
  std::size_t at = 0;
  for (const RowSpan& s : spans)
    for (std::size_t r = 0; r < s.rows; ++r) copy_row(rows, at++, buf, s.offset + r);
}

// Sum of the n row blocks of `parts` ([n x rows, H]), rounded once.
Tensor sum_blocks(const Tensor& parts, std::size_t n, DataType st) {
  const std::size_t rows = n ? parts.rows / n : 0;
  Tensor out(rows, parts.cols);
  for (std::size_t i = 0; i < out.size(); ++i) {
    float acc = 0;
    for (std::size_t b = 0; b < n; ++b) acc += parts.data[b * out.size() + i];
    out.data[i] = store_value(acc, st);
  }
  return out;
}

// `rows` repeated n times (the send buffer of an allgather-v as all-to-all-v).
Tensor repeated(const Tensor& rows, std::size_t n) {
  std::vector<Tensor> parts(n, rows);
  Tensor out = concat_rows(parts);
  out.cols = rows.cols;
  return out;
}

PlannedCall counts_call(const std::string& site, GroupKind g, std::size_t count) {
  return planned_call(site, Collective::allgather, g, count, DataType::int64);
}

}  // namespace

std::string_view etp_scheme_name(EtpScheme s) {
  return s == EtpScheme::allgather ? "allgather" : "scatter_gather";
}

void add_moe_options(CLI::App& app, MoeFlags& f) {
  MoeConfig& c = f.config;
  app.add_option("--experts", c.experts, "number of experts E, divisible by EP");
  app.add_option("--topk", c.topk, "experts per token k (1 .. E)");
  app.add_option("--moe-ffn", c.ffn, "expert FFN size F (default 2 x H)");
  app.add_option("--capacity-factor", c.capacity_factor,
                 "capacity per expert per rank ceil(C T k / E); 0: dropless (default)");
  app.add_option("--routing", f.routing, "learned|uniform|skewed (default learned)");
  app.add_option("--router-order", f.router_order,
                 "softmax_topk (Megatron's default) or topk_softmax");
  app.add_option("--etp-scheme", f.etp_scheme,
                 "ETP > 1: allgather (experts sharded: all-gather / reduce-scatter of the "
                 "rows, Megatron's) or scatter_gather (experts replicated: scatter / "
                 "gather of the rows)");
  app.add_flag("--identity-experts", c.identity_experts,
               "experts return their input (tests the dispatch / combine round trip)");
}

MoeConfig read_moe_flags(const MoeFlags& f, std::int64_t hidden) {
  MoeConfig c = f.config;
  if (c.experts < 1) throw UsageError("--experts must be at least 1, got " + std::to_string(c.experts));
  if (c.topk < 1 || c.topk > c.experts)
    throw UsageError("--topk must be in 1 .. experts (" + std::to_string(c.experts) + "), got " +
                     std::to_string(c.topk));
  if (c.ffn < 0) throw UsageError("--moe-ffn must be at least 0, got " + std::to_string(c.ffn));
  if (!(c.capacity_factor >= 0))
    throw UsageError("--capacity-factor must be at least 0 (0: dropless)");
  if (hidden < 1) throw UsageError("--hidden must be at least 1");
  c.routing = parse_routing_mode(f.routing);
  c.router_order = parse_router_order(f.router_order);
  if (f.etp_scheme == "allgather") c.etp_scheme = EtpScheme::allgather;
  else if (f.etp_scheme == "scatter_gather") c.etp_scheme = EtpScheme::scatter_gather;
  else
    throw UsageError("--etp-scheme must be allgather or scatter_gather, got '" + f.etp_scheme +
                     "'");
  return c;
}

MoeBlock::MoeBlock(const MoeConfig& c, std::size_t hidden, std::string site_prefix)
    : cfg_(c), h_(hidden), prefix_(std::move(site_prefix)) {}

std::size_t MoeBlock::ffn() const {
  return cfg_.ffn > 0 ? static_cast<std::size_t>(cfg_.ffn) : 2 * h_;
}

bool MoeBlock::sharded() const { return etp_ > 1 && cfg_.etp_scheme == EtpScheme::allgather; }
bool MoeBlock::replicated() const {
  return etp_ > 1 && cfg_.etp_scheme == EtpScheme::scatter_gather;
}

std::vector<Collective> MoeBlock::collectives() {
  return {Collective::allgather, Collective::alltoallv, Collective::allreduce};
}

std::vector<GroupKind> MoeBlock::groups(const ParallelConfig& c) const {
  if (c.etp > 1) return {GroupKind::ep, GroupKind::etp};
  return {GroupKind::ep};
}

void MoeBlock::check_layout(const ParallelConfig& c) const {
  if (c.etp > 1 && cfg_.etp_scheme == EtpScheme::allgather &&
      ffn() % static_cast<std::size_t>(c.etp) != 0)
    throw UsageError("expert FFN size " + std::to_string(ffn()) + " is not divisible by ETP " +
                     std::to_string(c.etp) + " (--etp-scheme allgather shards it)");
}

std::vector<PlannedCall> MoeBlock::forward_plan(const ParallelConfig& c, std::size_t) const {
  check_layout(c);
  const auto e = static_cast<std::size_t>(cfg_.experts);
  const auto ep = static_cast<std::size_t>(c.ep), etp = static_cast<std::size_t>(c.etp);
  std::vector<PlannedCall> p{counts_call(site(kCounts), GroupKind::ep, ep * e)};
  if (c.etp > 1) p.push_back(counts_call(site(kCountsEtp), GroupKind::etp, etp * ep * e));
  p.push_back(planned_call(site(kDispatch), Collective::alltoallv, GroupKind::ep, 0));
  if (c.etp > 1) {
    const bool ag = cfg_.etp_scheme == EtpScheme::allgather;
    p.push_back(planned_call(site(ag ? kEtpGatherF : kEtpScatterF), Collective::alltoallv, GroupKind::etp, 0));
    p.push_back(planned_call(site(ag ? kEtpReduceF : kEtpCollectF), Collective::alltoallv, GroupKind::etp, 0));
  }
  p.push_back(planned_call(site(kCombine), Collective::alltoallv, GroupKind::ep, 0));
  return p;
}

std::vector<PlannedCall> MoeBlock::backward_plan(const ParallelConfig& c, std::size_t) const {
  check_layout(c);
  std::vector<PlannedCall> p{planned_call(site(kCombineB), Collective::alltoallv, GroupKind::ep, 0)};
  if (c.etp > 1) {
    const bool ag = cfg_.etp_scheme == EtpScheme::allgather;
    p.push_back(planned_call(site(ag ? kEtpGatherB : kEtpScatterB), Collective::alltoallv, GroupKind::etp, 0));
    p.push_back(planned_call(site(ag ? kEtpReduceB : kEtpCollectB), Collective::alltoallv, GroupKind::etp, 0));
    if (!ag && !cfg_.identity_experts) {
      const std::size_t local = static_cast<std::size_t>(cfg_.experts / c.ep);
      p.push_back(planned_call(site(kEtpGrads), Collective::allreduce, GroupKind::etp, local * 2 * h_ * ffn()));
    }
  }
  p.push_back(planned_call(site(kDispatchB), Collective::alltoallv, GroupKind::ep, 0));
  return p;
}

void MoeBlock::setup(LayerContext& ctx) {
  const ParallelConfig& c = ctx.config();
  spec_ = {static_cast<std::size_t>(cfg_.experts), static_cast<std::size_t>(cfg_.topk),
           cfg_.capacity_factor, cfg_.router_order, cfg_.routing};
  ep_ = c.ep;
  etp_ = c.etp;
  ep_pos_ = ctx.position(GroupKind::ep).position;
  etp_pos_ = ctx.position(GroupKind::etp).position;
  local_ = spec_.experts / static_cast<std::size_t>(ep_);
  first_expert_ = static_cast<std::size_t>(ep_pos_) * local_;
  const std::size_t f = ffn();
  f_local_ = sharded() ? f / static_cast<std::size_t>(etp_) : f;
  const DataType st = ctx.storage();
  wr_ = make_full(ctx.seed(), {"Wr"}, h_, spec_.experts, weight_scale(h_), st);
  w1_.clear();
  w2_.clear();
  if (cfg_.identity_experts) return;
  const std::size_t col0 = sharded() ? static_cast<std::size_t>(etp_pos_) * f_local_ : 0;
  for (std::size_t le = 0; le < local_; ++le) {
    const int e = static_cast<int>(first_expert_ + le);
    w1_.push_back(make_block(ctx.seed(), {"W1", e}, {f, 0, h_, col0, f_local_}, weight_scale(h_), st));
    w2_.push_back(make_block(ctx.seed(), {"W2", e}, {h_, col0, f_local_, 0, h_}, weight_scale(f), st));
  }
}

// Rows at each ETP rank of expert group p (what its dispatch delivered).
std::vector<std::size_t> MoeBlock::group_rows(std::size_t p) const {
  const std::size_t e = spec_.experts, ep = static_cast<std::size_t>(ep_);
  std::vector<std::size_t> rows(static_cast<std::size_t>(etp_), 0);
  for (std::size_t t = 0; t < rows.size(); ++t)
    for (std::size_t q = 0; q < ep; ++q)
      for (std::size_t x = p * local_; x < (p + 1) * local_; ++x)
        rows[t] += static_cast<std::size_t>(counts_[(t * ep + q) * e + x]);
  return rows;
}

// The experts' row runs of the ETP ranks' received buffers, concatenated in etp order:
// etp rank t, source EP rank q, expert.
std::vector<Segment> MoeBlock::group_segments(std::size_t p) const {
  const std::size_t e = spec_.experts, ep = static_cast<std::size_t>(ep_);
  std::vector<Segment> segs;
  for (std::size_t t = 0; t < static_cast<std::size_t>(etp_); ++t)
    for (std::size_t q = 0; q < ep; ++q)
      for (std::size_t x = p * local_; x < (p + 1) * local_; ++x)
        segs.push_back({x, static_cast<std::size_t>(counts_[(t * ep + q) * e + x])});
  return segs;
}

void MoeBlock::compute_experts(const Tensor& in, const std::vector<std::vector<RowSpan>>& spans,
                               DataType st, Tensor& out) {
  xe_.assign(local_, Tensor());
  saved_.assign(local_, MlpSaved());
  for (std::size_t le = 0; le < local_; ++le) {
    xe_[le] = rows_at(in, spans[le]);
    if (xe_[le].rows == 0) continue;
    if (cfg_.identity_experts) {
      Tensor y = xe_[le];
      if (sharded() && etp_pos_ != 0) std::fill(y.data.begin(), y.data.end(), 0.0f);
      put_rows(y, spans[le], out);
      continue;
    }
    put_rows(mlp_forward(xe_[le], w1_[le], w2_[le], st, saved_[le]), spans[le], out);
  }
}

void MoeBlock::experts_backward(const Tensor& din, const std::vector<std::vector<RowSpan>>& spans,
                                DataType st, Tensor& dout) {
  dw1_.assign(cfg_.identity_experts ? 0 : local_, Tensor(h_, f_local_));
  dw2_.assign(cfg_.identity_experts ? 0 : local_, Tensor(f_local_, h_));
  for (std::size_t le = 0; le < local_; ++le) {
    Tensor dy = rows_at(din, spans[le]);
    if (dy.rows == 0) continue;
    if (cfg_.identity_experts) {
      if (sharded() && etp_pos_ != 0) std::fill(dy.data.begin(), dy.data.end(), 0.0f);
      put_rows(dy, spans[le], dout);
      continue;
    }
    MlpGrads g = mlp_backward(xe_[le], w1_[le], w2_[le], saved_[le], dy, st);
    put_rows(g.dx, spans[le], dout);
    dw1_[le] = std::move(g.dw1);
    dw2_[le] = std::move(g.dw2);
  }
}

Tensor MoeBlock::expert_stage_forward(LayerContext& ctx, const Tensor& recv) {
  const DataType st = ctx.storage();
  const auto p = static_cast<std::size_t>(ep_pos_);
  const std::vector<Segment> segs = group_segments(p);
  if (!sharded() && !replicated()) {
    spans_ = spans_by_expert(segs, 0, recv.rows, first_expert_, local_);
    Tensor out(recv.rows, h_);
    compute_experts(recv, spans_, st, out);
    return out;
  }
  const std::vector<std::size_t> rows = group_rows(p);
  const std::size_t n = rows.size(), me = static_cast<std::size_t>(etp_pos_);
  const std::size_t total = std::accumulate(rows.begin(), rows.end(), std::size_t{0});
  CollectiveCalls& calls = ctx.calls();
  if (sharded()) {
    Tensor full(total, h_), partial(total, h_), parts(n * recv.rows, h_);
    calls.alltoallv(GroupKind::etp, site(kEtpGatherF), repeated(recv, n).data, full.data,
                    allgatherv_splits(rows, h_));
    spans_ = spans_by_expert(segs, 0, total, first_expert_, local_);
    compute_experts(full, spans_, st, partial);
    calls.alltoallv(GroupKind::etp, site(kEtpReduceF), partial.data, parts.data,
                    reduce_scatterv_splits(rows, h_));
    return sum_blocks(parts, n, st);
  }
  const std::size_t b0 = even_block_start(total, n, me), bn = even_block_size(total, n, me);
  const std::vector<std::uint64_t> split = rebalance_splits(rows, h_);
  Tensor block(bn, h_), out_block(bn, h_), out(recv.rows, h_);
  calls.alltoallv(GroupKind::etp, site(kEtpScatterF), recv.data, block.data, split);
  spans_ = spans_by_expert(segs, b0, b0 + bn, first_expert_, local_);
  compute_experts(block, spans_, st, out_block);
  calls.alltoallv(GroupKind::etp, site(kEtpCollectF), out_block.data, out.data,
                  transpose_splits(split, n));
  return out;
}

Tensor MoeBlock::expert_stage_backward(LayerContext& ctx, const Tensor& drecv) {
  const DataType st = ctx.storage();
  if (!sharded() && !replicated()) {
    Tensor dout(drecv.rows, h_);
    experts_backward(drecv, spans_, st, dout);
    return dout;
  }
  const std::vector<std::size_t> rows = group_rows(static_cast<std::size_t>(ep_pos_));
  const std::size_t n = rows.size(), me = static_cast<std::size_t>(etp_pos_);
  const std::size_t total = std::accumulate(rows.begin(), rows.end(), std::size_t{0});
  CollectiveCalls& calls = ctx.calls();
  if (sharded()) {
    Tensor full(total, h_), partial(total, h_), parts(n * drecv.rows, h_);
    calls.alltoallv(GroupKind::etp, site(kEtpGatherB), repeated(drecv, n).data, full.data,
                    allgatherv_splits(rows, h_));
    experts_backward(full, spans_, st, partial);
    calls.alltoallv(GroupKind::etp, site(kEtpReduceB), partial.data, parts.data,
                    reduce_scatterv_splits(rows, h_));
    return sum_blocks(parts, n, st);
  }
  const std::size_t bn = even_block_size(total, n, me);
  const std::vector<std::uint64_t> split = rebalance_splits(rows, h_);
  Tensor block(bn, h_), dblock(bn, h_), dout(drecv.rows, h_);
  calls.alltoallv(GroupKind::etp, site(kEtpScatterB), drecv.data, block.data, split);
  experts_backward(block, spans_, st, dblock);
  calls.alltoallv(GroupKind::etp, site(kEtpCollectB), dblock.data, dout.data,
                  transpose_splits(split, n));
  if (cfg_.identity_experts) return dout;
  // Replicated experts: their weight gradients are summed over the ETP group.
  std::vector<float> packed;
  for (const std::vector<Tensor>* set : {&dw1_, &dw2_})
    for (const Tensor& t : *set) packed.insert(packed.end(), t.data.begin(), t.data.end());
  calls.allreduce(GroupKind::etp, site(kEtpGrads), packed, ReduceOp::sum, st);
  std::size_t at = 0;
  for (std::vector<Tensor>* set : {&dw1_, &dw2_})
    for (Tensor& t : *set) {
      std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(at), t.size(), t.data.begin());
      at += t.size();
    }
  return dout;
}

Tensor MoeBlock::forward(LayerContext& ctx, const Tensor& x) {
  const DataType st = ctx.storage();
  const std::size_t tokens = x.rows, e = spec_.experts, k = spec_.topk;
  const auto ep = static_cast<std::size_t>(ep_);
  CollectiveCalls& calls = ctx.calls();
  x_ = x;
  logits_ = matmul(x, Trans::no, wr_, Trans::no, st);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < e; ++j)
      logits_.at(t, j) += static_cast<float>(routing_bias(spec_, t, j));
  routing_ = route(logits_.data, tokens, spec_);
  // (1) split-size exchange.
  std::vector<std::int64_t> ep_counts(ep * e);
  calls.allgather_counts(GroupKind::ep, site(kCounts), routing_.counts, ep_counts);
  counts_ = ep_counts;
  if (etp_ > 1) {
    counts_.assign(static_cast<std::size_t>(etp_) * ep * e, 0);
    calls.allgather_counts(GroupKind::etp, site(kCountsEtp), ep_counts, counts_);
  }
  dispatch_splits_ = dispatch_splits(ep_counts, ep, e, h_);
  // (2) dispatch.
  const std::size_t sent = routing_.order.size();
  Tensor send(sent, h_);
  for (std::size_t i = 0; i < sent; ++i) copy_row(x, routing_.order[i] / k, send, i);
  Tensor recv(rows_of(dispatch_splits_, ep, static_cast<std::size_t>(ep_pos_), h_, true), h_);
  calls.alltoallv(GroupKind::ep, site(kDispatch), send.data, recv.data, dispatch_splits_);
  const Tensor out = expert_stage_forward(ctx, recv);
  // (3) combine, unpermute, weighted sum.
  o_ = Tensor(sent, h_);
  calls.alltoallv(GroupKind::ep, site(kCombine), out.data, o_.data,
                  transpose_splits(dispatch_splits_, ep));
  std::vector<float> acc(tokens * h_, 0.0f);
  for (std::size_t i = 0; i < sent; ++i) {
    const std::size_t s = routing_.order[i], t = s / k;
    const float g = routing_.gate[s];
    for (std::size_t c = 0; c < h_; ++c) acc[t * h_ + c] += g * o_.at(i, c);
  }
  Tensor y(tokens, h_);
  for (std::size_t i = 0; i < y.size(); ++i) y.data[i] = store_value(acc[i], st);
  return y;
}

Tensor MoeBlock::backward(LayerContext& ctx, const Tensor& dy) {
  const DataType st = ctx.storage();
  const std::size_t tokens = x_.rows, e = spec_.experts, k = spec_.topk;
  const auto ep = static_cast<std::size_t>(ep_);
  const std::size_t sent = routing_.order.size();
  CollectiveCalls& calls = ctx.calls();
  // (4) dO rows to the experts (the dispatch's splits).
  Tensor dsend(sent, h_);
  for (std::size_t i = 0; i < sent; ++i) {
    const std::size_t s = routing_.order[i], t = s / k;
    for (std::size_t c = 0; c < h_; ++c) dsend.at(i, c) = store_value(routing_.gate[s] * dy.at(t, c), st);
  }
  Tensor drecv(rows_of(dispatch_splits_, ep, static_cast<std::size_t>(ep_pos_), h_, true), h_);
  calls.alltoallv(GroupKind::ep, site(kCombineB), dsend.data, drecv.data, dispatch_splits_);
  const Tensor dout = expert_stage_backward(ctx, drecv);
  // (5) dX rows back (the combine's splits).
  Tensor dxe(sent, h_);
  calls.alltoallv(GroupKind::ep, site(kDispatchB), dout.data, dxe.data,
                  transpose_splits(dispatch_splits_, ep));
  // Router: dgate = dY . O, through the gates to dlogits.
  std::vector<float> dgate(tokens * k, 0.0f);
  for (std::size_t i = 0; i < sent; ++i) {
    const std::size_t s = routing_.order[i], t = s / k;
    float d = 0;
    for (std::size_t c = 0; c < h_; ++c) d += dy.at(t, c) * o_.at(i, c);
    dgate[s] = d;
  }
  Tensor dlogits(tokens, e);
  for (std::size_t t = 0; t < tokens; ++t)
    gates_backward(&logits_.data[t * e], e, &routing_.expert[t * k], k, spec_.order,
                   &dgate[t * k], &dlogits.data[t * e]);
  round_to_storage(dlogits, st);
  dwr_ = matmul(x_, Trans::yes, dlogits, Trans::no, st);
  const Tensor dx_router = matmul(dlogits, Trans::no, wr_, Trans::yes, st);
  std::vector<float> acc(dx_router.data.begin(), dx_router.data.end());
  for (std::size_t i = 0; i < sent; ++i) {
    const std::size_t t = routing_.order[i] / k;
    for (std::size_t c = 0; c < h_; ++c) acc[t * h_ + c] += dxe.at(i, c);
  }
  Tensor dx(tokens, h_);
  for (std::size_t i = 0; i < dx.size(); ++i) dx.data[i] = store_value(acc[i], st);
  return dx;
}

// ---- verification --------------------------------------------------------------------------

MoeBlock::Gathered MoeBlock::gather(LayerContext& ctx) const {
  const MPI_Comm c = ctx.ctrl();
  const std::size_t tokens = routing_.tokens, k = spec_.topk;
  Tensor routing(tokens, 2 * k);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < k; ++j) {
      routing.at(t, j) = static_cast<float>(routing_.expert[t * k + j]);
      routing.at(t, k + j) = routing_.kept[t * k + j];
    }
  Gathered g;
  g.ep = ep_;
  g.etp = etp_;
  g.wr = gather_to_root(c, wr_);
  g.w1 = gather_to_root(c, concat_rows(w1_));
  g.w2 = gather_to_root(c, concat_rows(w2_));
  g.dwr = gather_to_root(c, dwr_);
  g.dw1 = gather_to_root(c, concat_rows(dw1_));
  g.dw2 = gather_to_root(c, concat_rows(dw2_));
  g.routing = gather_to_root(c, routing);
  return g;
}

std::vector<std::vector<int>> MoeBlock::replicas(const ParallelConfig& c) {
  const int size = c.ep * c.etp;
  std::vector<std::vector<int>> out;
  for (int b = 0; b < c.world / size; ++b) {
    out.emplace_back(static_cast<std::size_t>(size));
    std::iota(out.back().begin(), out.back().end(), b * size);
  }
  return out;
}

}  // namespace collscope::layers
