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
// Chunks (--chunks C, ETP 1): the router still decides over all T tokens (the capacity
// is per expert per rank, as without chunks), then the tokens go through the experts in
// C blocks (the uneven rule): one count exchange for all of them ([EP, C, E]), and per
// chunk its own dispatch, expert FFN and combine (sites "... chunk c/C"). With --overlap
// chunk c+1's dispatch runs on the EP group's stream while chunk c's experts compute, and
// each combine while the next chunk's experts compute; backward the same with the
// gradients. The experts' weight gradients are summed over the chunks in float32 and
// rounded once. C = 1 is the flow above, call for call.
//
// Identity experts (--identity-experts): an expert returns its input (no weights); under
// the sharded scheme only ETP rank 0 returns it (the others 0), so the reduce-scatter
// sums it exactly. With topk 1 and topk_softmax the gate is exactly 1: Y == X bit for bit.
#include "collscope/layers/blocks/moe_block.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "collscope/errors.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/hd_routing.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kCounts = "fwd counts allgather tokens_per_expert [EP,E] int64";
constexpr const char* kCountsChunks = "fwd counts allgather tokens_per_expert [EP,C,E] int64";
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

// The rows of `buf` the spans name, one after the other.
Array rows_at(const Array& buf, const std::vector<RowSpan>& spans) {
  std::size_t n = 0;
  for (const RowSpan& s : spans) n += s.rows;
  Array out(buf.engine(), n, buf.cols(), buf.dtype());
  std::size_t at = 0;
  for (const RowSpan& s : spans) {
    buf.engine().copy(out.at(at), buf.at(s.offset), s.rows * buf.cols() * dtype_size(buf.dtype()));
    at += s.rows;
  }
  return out;
}

void put_rows(const Array& rows, const std::vector<RowSpan>& spans, Array& buf) {
  std::size_t at = 0;
  for (const RowSpan& s : spans) {
    buf.engine().copy(buf.at(s.offset), rows.at(at), s.rows * buf.cols() * dtype_size(buf.dtype()));
    at += s.rows;
  }
}

// Sum of the n row blocks of `parts` ([n x rows, H]), rounded once.
Array sum_blocks(const Array& parts, std::size_t n, DataType st) {
  const std::size_t rows = n ? parts.rows() / n : 0;
  Array out(parts.engine(), rows, parts.cols(), st);
  parts.engine().kernels().sum_blocks({out.data(), st}, {parts.data(), parts.dtype()}, n,
                                      out.size(), parts.engine().stream());
  return out;
}

// `rows` repeated n times (the send buffer of an allgather-v as all-to-all-v).
Array repeated(const Array& rows, std::size_t n) {
  Array out(rows.engine(), n * rows.rows(), rows.cols(), rows.dtype());
  for (std::size_t i = 0; i < n; ++i) ops::put_rows(out, i * rows.rows(), rows);
  return out;
}

PlannedCall counts_call(const std::string& site, GroupKind g, std::size_t count) {
  return planned_call(site, Collective::allgather, g, count, DataType::int64);
}

// A view of rows [r0, ...) of an array: the kernels' In / Out at that row.
In in_at(const Array& a, std::size_t r0 = 0) { return {a.at(r0), a.dtype()}; }
Out out_at(Array& a, std::size_t r0 = 0) { return {a.at(r0), a.dtype()}; }

int routing_mode_code(RoutingMode m) {
  switch (m) {
    case RoutingMode::learned: return hd::kRoutingLearned;
    case RoutingMode::uniform: return hd::kRoutingUniform;
    case RoutingMode::skewed: break;
  }
  return hd::kRoutingSkewed;
}

int order_code(RouterOrder o) {
  return o == RouterOrder::softmax_topk ? hd::kSoftmaxTopk : hd::kTopkSoftmax;
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
  app.add_option("--chunks", c.chunks,
                 "the tokens in this many chunks, each dispatched, computed and combined on "
                 "its own (ETP 1; with --overlap chunk c+1's dispatch runs beside chunk c's "
                 "experts); default 1");
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
  if (c.chunks < 1) throw UsageError("--chunks must be at least 1, got " + std::to_string(c.chunks));
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

void MoeBlock::check_layout(const ParallelConfig& c, std::size_t tokens) const {
  if (c.etp > 1 && cfg_.etp_scheme == EtpScheme::allgather &&
      ffn() % static_cast<std::size_t>(c.etp) != 0)
    throw UsageError("expert FFN size " + std::to_string(ffn()) + " is not divisible by ETP " +
                     std::to_string(c.etp) + " (--etp-scheme allgather shards it)");
  if (chunks() > 1 && c.etp > 1)
    throw UsageError("--chunks " + std::to_string(chunks()) + " needs ETP 1 (got ETP " +
                     std::to_string(c.etp) + ")");
  if (chunks() > tokens)
    throw UsageError("--chunks " + std::to_string(chunks()) + " is more than the " +
                     std::to_string(tokens) + " tokens of a rank");
}

std::string MoeBlock::chunk_site(const char* s, std::size_t c) const {
  if (chunks() == 1) return site(s);
  return site(std::string(s) + " chunk " + std::to_string(c) + "/" + std::to_string(chunks()));
}

// The order the calls are issued in: chunk c+1's dispatch before chunk c's experts, so
// it can run beside them (--overlap); under ETP > 1 (one chunk) the ETP exchanges around
// the experts.
std::vector<PlannedCall> MoeBlock::forward_plan(const ParallelConfig& c, std::size_t tokens) const {
  check_layout(c, tokens);
  const auto e = static_cast<std::size_t>(cfg_.experts);
  const auto ep = static_cast<std::size_t>(c.ep), etp = static_cast<std::size_t>(c.etp);
  const bool ag = cfg_.etp_scheme == EtpScheme::allgather;
  const auto rows = [](std::string s, GroupKind g) {
    return planned_call(std::move(s), Collective::alltoallv, g, 0);
  };
  std::vector<PlannedCall> p{counts_call(site(chunks() == 1 ? kCounts : kCountsChunks),
                                         GroupKind::ep, ep * chunks() * e)};
  if (c.etp > 1) p.push_back(counts_call(site(kCountsEtp), GroupKind::etp, etp * ep * e));
  p.push_back(rows(chunk_site(kDispatch, 0), GroupKind::ep));
  for (std::size_t k = 0; k < chunks(); ++k) {
    if (k + 1 < chunks()) p.push_back(rows(chunk_site(kDispatch, k + 1), GroupKind::ep));
    if (c.etp > 1) {
      p.push_back(rows(site(ag ? kEtpGatherF : kEtpScatterF), GroupKind::etp));
      p.push_back(rows(site(ag ? kEtpReduceF : kEtpCollectF), GroupKind::etp));
    }
    p.push_back(rows(chunk_site(kCombine, k), GroupKind::ep));
  }
  return p;
}

std::vector<PlannedCall> MoeBlock::backward_plan(const ParallelConfig& c, std::size_t tokens) const {
  check_layout(c, tokens);
  const bool ag = cfg_.etp_scheme == EtpScheme::allgather;
  const auto rows = [](std::string s, GroupKind g) {
    return planned_call(std::move(s), Collective::alltoallv, g, 0);
  };
  std::vector<PlannedCall> p{rows(chunk_site(kCombineB, 0), GroupKind::ep)};
  for (std::size_t k = 0; k < chunks(); ++k) {
    if (k + 1 < chunks()) p.push_back(rows(chunk_site(kCombineB, k + 1), GroupKind::ep));
    if (c.etp > 1) {
      p.push_back(rows(site(ag ? kEtpGatherB : kEtpScatterB), GroupKind::etp));
      p.push_back(rows(site(ag ? kEtpReduceB : kEtpCollectB), GroupKind::etp));
      if (!ag && !cfg_.identity_experts) {
        const std::size_t local = static_cast<std::size_t>(cfg_.experts / c.ep);
        p.push_back(planned_call(site(kEtpGrads), Collective::allreduce, GroupKind::etp,
                                 local * 2 * h_ * ffn()));
      }
    }
    p.push_back(rows(chunk_site(kDispatchB, k), GroupKind::ep));
  }
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
  Engine& e = ctx.engine();
  wr_ = ops::upload(e, make_full(ctx.seed(), {"Wr"}, h_, spec_.experts, weight_scale(h_), st), st);
  w1_.clear();
  w2_.clear();
  if (cfg_.identity_experts) return;
  const std::size_t col0 = sharded() ? static_cast<std::size_t>(etp_pos_) * f_local_ : 0;
  for (std::size_t le = 0; le < local_; ++le) {
    const int ex = static_cast<int>(first_expert_ + le);
    w1_.push_back(ops::upload(
        e, make_block(ctx.seed(), {"W1", ex}, {f, 0, h_, col0, f_local_}, weight_scale(h_), st), st));
    w2_.push_back(ops::upload(
        e, make_block(ctx.seed(), {"W2", ex}, {h_, col0, f_local_, 0, h_}, weight_scale(f), st), st));
  }
}

// Rows at each ETP rank of this rank's expert group (what its dispatch delivered).
std::vector<std::size_t> MoeBlock::group_rows(const Chunk& ch) const {
  const std::size_t e = spec_.experts, ep = static_cast<std::size_t>(ep_);
  const std::size_t p = static_cast<std::size_t>(ep_pos_);
  std::vector<std::size_t> rows(static_cast<std::size_t>(etp_), 0);
  for (std::size_t t = 0; t < rows.size(); ++t)
    for (std::size_t q = 0; q < ep; ++q)
      for (std::size_t x = p * local_; x < (p + 1) * local_; ++x)
        rows[t] += static_cast<std::size_t>(ch.counts[(t * ep + q) * e + x]);
  return rows;
}

// The experts' row runs of the ETP ranks' received buffers, concatenated in etp order:
// etp rank t, source EP rank q, expert.
std::vector<Segment> MoeBlock::group_segments(const Chunk& ch) const {
  const std::size_t e = spec_.experts, ep = static_cast<std::size_t>(ep_);
  const std::size_t p = static_cast<std::size_t>(ep_pos_);
  std::vector<Segment> segs;
  for (std::size_t t = 0; t < static_cast<std::size_t>(etp_); ++t)
    for (std::size_t q = 0; q < ep; ++q)
      for (std::size_t x = p * local_; x < (p + 1) * local_; ++x)
        segs.push_back({x, static_cast<std::size_t>(ch.counts[(t * ep + q) * e + x])});
  return segs;
}

// logits = X Wr (rounded to the storage dtype) + the routing bias, in float32; each
// token's top-k and gates, the capacity, and each chunk's kept assignments per expert.
void MoeBlock::route(LayerContext& ctx, const Array& x) {
  Engine& e = ctx.engine();
  Kernels& k = e.kernels();
  const std::size_t tokens = x.rows(), slots = tokens * spec_.topk;
  logits_ = ops::cast(ops::matmul(x, Trans::no, wr_, Trans::no, ctx.storage()), DataType::float32);
  k.add_routing_bias(logits_.as<float>(),
                     {routing_mode_code(spec_.mode), spec_.experts, spec_.topk}, tokens, e.stream());
  expert_ = Array(e, slots, 1, DataType::int32);
  gate_ = Array(e, slots, 1, DataType::float32);
  kept_ = Array(e, slots, 1, DataType::uint8);
  k.route(expert_.as<std::int32_t>(), gate_.as<float>(), logits_.as<float>(), tokens,
          spec_.experts, spec_.topk, order_code(spec_.order), e.stream());
  k.capacity(kept_.as<std::uint8_t>(), expert_.as<std::int32_t>(), gate_.as<float>(), slots,
             expert_capacity(spec_, tokens), e.stream());
  chunks_.clear();
  chunks_.resize(chunks());
  Array counts(e, chunks(), spec_.experts, DataType::int64);
  for (std::size_t c = 0; c < chunks(); ++c) {
    Chunk& ch = chunks_[c];
    ch.t0 = even_block_start(tokens, chunks(), c);
    ch.tokens = even_block_size(tokens, chunks(), c);
    k.expert_counts(counts.as<std::int64_t>() + c * spec_.experts,
                    expert_.as<std::int32_t>() + ch.t0 * spec_.topk,
                    kept_.as<std::uint8_t>() + ch.t0 * spec_.topk, ch.tokens * spec_.topk,
                    spec_.experts, e.stream());
  }
  my_counts_ = ops::download_vector<std::int64_t>(counts);
}

// (1) Every rank's counts over EP ([EP, C, E]), and under ETP > 1 over ETP too: each
// chunk's [ETP x EP x E] of the expert group.
void MoeBlock::exchange_counts(LayerContext& ctx) {
  Engine& e = ctx.engine();
  const std::size_t ne = spec_.experts, ep = static_cast<std::size_t>(ep_), c = chunks();
  Array mine = ops::upload_int64(e, my_counts_);
  Array all(e, ep * c * ne, 1, DataType::int64);
  ctx.calls().allgather_counts(GroupKind::ep, site(c == 1 ? kCounts : kCountsChunks), mine, all);
  std::vector<std::int64_t> ep_counts = ops::download_vector<std::int64_t>(all);
  if (etp_ > 1) {  // one chunk
    Array group(e, static_cast<std::size_t>(etp_) * ep * ne, 1, DataType::int64);
    ctx.calls().allgather_counts(GroupKind::etp, site(kCountsEtp), all, group);
    chunks_[0].counts = ops::download_vector<std::int64_t>(group);
    return;
  }
  for (std::size_t k = 0; k < c; ++k) {
    std::vector<std::int64_t>& counts = chunks_[k].counts;
    counts.assign(ep * ne, 0);
    for (std::size_t q = 0; q < ep; ++q)
      std::copy_n(ep_counts.begin() + static_cast<std::ptrdiff_t>((q * c + k) * ne), ne,
                  counts.begin() + static_cast<std::ptrdiff_t>(q * ne));
  }
}

// A chunk's permutation of its kept slots, its split matrix and row counts.
void MoeBlock::plan_chunk(LayerContext& ctx, Chunk& ch) {
  Engine& e = ctx.engine();
  const std::size_t ne = spec_.experts, ep = static_cast<std::size_t>(ep_), k = spec_.topk;
  const std::vector<std::int64_t> ep_counts(ch.counts.begin(),
                                            ch.counts.begin() + static_cast<std::ptrdiff_t>(ep * ne));
  // Under ETP > 1 the group's counts hold every etp position; this rank's EP group's
  // are the ones at its own etp position.
  std::vector<std::int64_t> mine_ep = ep_counts;
  if (etp_ > 1)
    mine_ep.assign(ch.counts.begin() + static_cast<std::ptrdiff_t>(etp_pos_ * ep * ne),
                   ch.counts.begin() + static_cast<std::ptrdiff_t>((etp_pos_ + 1) * ep * ne));
  ch.splits = dispatch_splits(mine_ep, ep, ne, h_);
  ch.sent = rows_of(ch.splits, ep, static_cast<std::size_t>(ep_pos_), h_, false);
  ch.received = rows_of(ch.splits, ep, static_cast<std::size_t>(ep_pos_), h_, true);
  ch.order = Array(e, ch.sent, 1, DataType::int32);
  ch.slot_row = Array(e, ch.tokens * k, 1, DataType::int32);
  e.kernels().permutation(ch.order.as<std::int32_t>(), ch.slot_row.as<std::int32_t>(),
                          expert_.as<std::int32_t>() + ch.t0 * k,
                          kept_.as<std::uint8_t>() + ch.t0 * k, ch.tokens * k, e.stream());
}

// (2) The chunk's kept rows of X in permuted order (the dispatch's send buffer).
Array MoeBlock::dispatch_rows(const Array& x, const Chunk& ch) const {
  Array send(x.engine(), ch.sent, h_, x.dtype());
  x.engine().kernels().gather_rows(out_at(send), in_at(x, ch.t0), ch.order.as<std::int32_t>(),
                                   spec_.topk, ch.sent, h_, x.engine().stream());
  return send;
}

// (4) gate x dY of each kept slot of the chunk, permuted (the combine's backward).
Array MoeBlock::gradient_rows(const Array& dy, const Chunk& ch, DataType st) const {
  Array send(dy.engine(), ch.sent, h_, st);
  dy.engine().kernels().gather_rows_scaled(out_at(send), in_at(dy, ch.t0),
                                           gate_.as<float>() + ch.t0 * spec_.topk,
                                           ch.order.as<std::int32_t>(), spec_.topk, ch.sent, h_,
                                           dy.engine().stream());
  return send;
}

void MoeBlock::compute_experts(Chunk& ch, const Array& in, DataType st, Array& out) {
  Engine& e = in.engine();
  e.memset(out.data(), 0, out.bytes());
  ch.xe.clear();
  ch.xe.resize(local_);
  ch.saved.clear();
  ch.saved.resize(local_);
  for (std::size_t le = 0; le < local_; ++le) {
    ch.xe[le] = rows_at(in, ch.spans[le]);
    if (ch.xe[le].rows() == 0) continue;
    if (cfg_.identity_experts) {
      Array y = ops::clone(ch.xe[le]);
      if (sharded() && etp_pos_ != 0) e.memset(y.data(), 0, y.bytes());
      put_rows(y, ch.spans[le], out);
      continue;
    }
    put_rows(mlp_forward(ch.xe[le], w1_[le], w2_[le], st, ch.saved[le]), ch.spans[le], out);
  }
}

// The chunk's expert backward: the rows' input gradients into dout, the weight gradients
// added to the float32 sums.
void MoeBlock::experts_backward(Chunk& ch, const Array& din, DataType st, Array& dout) {
  Engine& e = din.engine();
  e.memset(dout.data(), 0, dout.bytes());
  for (std::size_t le = 0; le < local_; ++le) {
    Array dy = rows_at(din, ch.spans[le]);
    if (dy.rows() == 0) continue;
    if (cfg_.identity_experts) {
      if (sharded() && etp_pos_ != 0) e.memset(dy.data(), 0, dy.bytes());
      put_rows(dy, ch.spans[le], dout);
      continue;
    }
    const MlpInputGrad g = mlp_input_grad(w1_[le], w2_[le], ch.saved[le], dy, st);
    put_rows(g.dx, ch.spans[le], dout);
    ops::matmul(ch.saved[le].a, Trans::yes, dy, Trans::no, dw2_acc_[le], 1.0f);
    ops::matmul(ch.xe[le], Trans::yes, g.dz, Trans::no, dw1_acc_[le], 1.0f);
  }
}

Array MoeBlock::expert_stage(LayerContext& ctx, const Chunk& ch, const Array& in,
                             const EtpSites& sites, const ExpertCompute& compute) {
  const DataType st = ctx.storage();
  Engine& e = ctx.engine();
  if (!sharded() && !replicated()) {
    Array out(e, in.rows(), h_, st);
    compute(in, 0, in.rows(), out);
    return out;
  }
  const std::vector<std::size_t> rows = group_rows(ch);
  const std::size_t n = rows.size(), me = static_cast<std::size_t>(etp_pos_);
  const std::size_t total = std::accumulate(rows.begin(), rows.end(), std::size_t{0});
  CollectiveCalls& calls = ctx.calls();
  if (sharded()) {
    Array full(e, total, h_, st), partial(e, total, h_, st), parts(e, n * in.rows(), h_, st);
    calls.alltoallv(GroupKind::etp, site(sites.gather), repeated(in, n), full,
                    allgatherv_splits(rows, h_));
    compute(full, 0, total, partial);
    calls.alltoallv(GroupKind::etp, site(sites.reduce), partial, parts,
                    reduce_scatterv_splits(rows, h_));
    return sum_blocks(parts, n, st);
  }
  const std::size_t b0 = even_block_start(total, n, me), bn = even_block_size(total, n, me);
  const std::vector<std::uint64_t> split = rebalance_splits(rows, h_);
  Array block(e, bn, h_, st), out_block(e, bn, h_, st), out(e, in.rows(), h_, st);
  calls.alltoallv(GroupKind::etp, site(sites.scatter), in, block, split);
  compute(block, b0, b0 + bn, out_block);
  calls.alltoallv(GroupKind::etp, site(sites.collect), out_block, out, transpose_splits(split, n));
  return out;
}

Array MoeBlock::expert_stage_forward(LayerContext& ctx, Chunk& ch, const Array& recv) {
  const std::vector<Segment> segs = group_segments(ch);
  return expert_stage(ctx, ch, recv, {kEtpGatherF, kEtpReduceF, kEtpScatterF, kEtpCollectF},
                      [&](const Array& in, std::size_t first, std::size_t end, Array& out) {
                        ch.spans = spans_by_expert(segs, first, end, first_expert_, local_);
                        compute_experts(ch, in, ctx.storage(), out);
                      });
}

Array MoeBlock::expert_stage_backward(LayerContext& ctx, Chunk& ch, const Array& drecv) {
  Array dout = expert_stage(ctx, ch, drecv, {kEtpGatherB, kEtpReduceB, kEtpScatterB, kEtpCollectB},
                            [&](const Array& in, std::size_t, std::size_t, Array& out) {
                              experts_backward(ch, in, ctx.storage(), out);
                            });
  if (replicated() && !cfg_.identity_experts) {
    finish_weight_grads(ctx.storage());
    sum_replicated_grads(ctx);
  }
  return dout;
}

// The experts' float32 sums over the chunks, rounded once to the storage dtype.
void MoeBlock::finish_weight_grads(DataType st) {
  dw1_.clear();
  dw2_.clear();
  for (const Array& a : dw1_acc_) dw1_.push_back(ops::cast(a, st));
  for (const Array& a : dw2_acc_) dw2_.push_back(ops::cast(a, st));
}

// Replicated experts (scatter_gather): their weight gradients summed over the ETP group,
// packed into one call.
void MoeBlock::sum_replicated_grads(LayerContext& ctx) {
  Engine& e = ctx.engine();
  std::size_t total = 0;
  for (const std::vector<Array>* set : {&dw1_, &dw2_})
    for (const Array& t : *set) total += t.size();
  Array packed(e, 1, total, ctx.storage());
  std::size_t at = 0;
  for (const std::vector<Array>* set : {&dw1_, &dw2_})
    for (const Array& t : *set) {
      e.copy(packed.at(0, at), t.data(), t.bytes());
      at += t.size();
    }
  ctx.calls().allreduce(GroupKind::etp, site(kEtpGrads), packed);
  at = 0;
  for (std::vector<Array>* set : {&dw1_, &dw2_})
    for (Array& t : *set) {
      e.copy(t.data(), packed.at(0, at), t.bytes());
      at += t.size();
    }
}

Array MoeBlock::forward(LayerContext& ctx, const Array& x) {
  const DataType st = ctx.storage();
  Engine& e = ctx.engine();
  CollectiveCalls& calls = ctx.calls();
  const auto ep = static_cast<std::size_t>(ep_);
  x_ = ops::clone(x);
  route(ctx, x);
  exchange_counts(ctx);
  for (Chunk& ch : chunks_) plan_chunk(ctx, ch);
  // (2) dispatch, experts, (3) combine, chunk after chunk; chunk c+1's dispatch is issued
  // before chunk c's experts, each joined where its rows are needed.
  std::vector<Array> recv(chunks()), sends(chunks()), outs(chunks());
  std::vector<Ticket> dispatched(chunks()), combined(chunks());
  const auto dispatch = [&](std::size_t c) {
    Chunk& ch = chunks_[c];
    sends[c] = dispatch_rows(x, ch);
    recv[c] = Array(e, ch.received, h_, st);
    dispatched[c] = calls.alltoallv(GroupKind::ep, chunk_site(kDispatch, c), sends[c], recv[c],
                                    ch.splits, Join::later);
  };
  dispatch(0);
  for (std::size_t c = 0; c < chunks(); ++c) {
    Chunk& ch = chunks_[c];
    if (c + 1 < chunks()) dispatch(c + 1);
    calls.join(dispatched[c]);
    outs[c] = expert_stage_forward(ctx, ch, recv[c]);
    ch.o = Array(e, ch.sent, h_, st);
    combined[c] = calls.alltoallv(GroupKind::ep, chunk_site(kCombine, c), outs[c], ch.o,
                                  transpose_splits(ch.splits, ep), Join::later);
  }
  // Unpermute and the gate-weighted sum, chunk by chunk.
  Array y(e, x.rows(), h_, st);
  for (std::size_t c = 0; c < chunks(); ++c) {
    const Chunk& ch = chunks_[c];
    calls.join(combined[c]);
    e.kernels().combine_rows(out_at(y, ch.t0), {}, in_at(ch.o), ch.slot_row.as<std::int32_t>(),
                             gate_.as<float>() + ch.t0 * spec_.topk, ch.tokens, spec_.topk, h_,
                             e.stream());
  }
  return y;
}

Array MoeBlock::backward(LayerContext& ctx, const Array& dy) {
  const DataType st = ctx.storage();
  Engine& e = ctx.engine();
  const std::size_t tokens = x_.rows(), ne = spec_.experts, k = spec_.topk;
  const auto ep = static_cast<std::size_t>(ep_);
  CollectiveCalls& calls = ctx.calls();
  dw1_acc_.clear();
  dw2_acc_.clear();
  if (!cfg_.identity_experts)
    for (std::size_t le = 0; le < local_; ++le) {
      dw1_acc_.push_back(ops::zeros(e, h_, f_local_, DataType::float32));
      dw2_acc_.push_back(ops::zeros(e, f_local_, h_, DataType::float32));
    }
  // (4) dO rows to the experts (the dispatch's splits), (5) dX rows back, chunk by chunk.
  std::vector<Array> dsend(chunks()), drecv(chunks()), douts(chunks()), dxe(chunks());
  std::vector<Ticket> sent(chunks()), returned(chunks());
  const auto send_gradients = [&](std::size_t c) {
    const Chunk& ch = chunks_[c];
    dsend[c] = gradient_rows(dy, ch, st);
    drecv[c] = Array(e, ch.received, h_, st);
    sent[c] = calls.alltoallv(GroupKind::ep, chunk_site(kCombineB, c), dsend[c], drecv[c],
                              ch.splits, Join::later);
  };
  send_gradients(0);
  for (std::size_t c = 0; c < chunks(); ++c) {
    Chunk& ch = chunks_[c];
    if (c + 1 < chunks()) send_gradients(c + 1);
    calls.join(sent[c]);
    douts[c] = expert_stage_backward(ctx, ch, drecv[c]);
    dxe[c] = Array(e, ch.sent, h_, st);
    returned[c] = calls.alltoallv(GroupKind::ep, chunk_site(kDispatchB, c), douts[c], dxe[c],
                                  transpose_splits(ch.splits, ep), Join::later);
  }
  if (!replicated() && !cfg_.identity_experts) finish_weight_grads(st);
  // Router: dgate = dY . O, through the gates to dlogits, then dWr and dX's router part.
  Array dgate = ops::zeros(e, tokens * k, 1, DataType::float32);
  for (const Chunk& ch : chunks_)
    e.kernels().slot_dots(dgate.as<float>() + ch.t0 * k, in_at(dy, ch.t0), in_at(ch.o),
                          ch.order.as<std::int32_t>(), ch.sent, k, h_, e.stream());
  Array dlogits32(e, tokens, ne, DataType::float32);
  e.kernels().router_backward(dlogits32.as<float>(), logits_.as<float>(),
                              expert_.as<std::int32_t>(), dgate.as<float>(), tokens, ne, k,
                              order_code(spec_.order), e.stream());
  const Array dlogits = ops::cast(dlogits32, st);
  dwr_ = ops::matmul(x_, Trans::yes, dlogits, Trans::no, st);
  const Array dx_router = ops::matmul(dlogits, Trans::no, wr_, Trans::yes, st);
  Array dx(e, tokens, h_, st);
  for (std::size_t c = 0; c < chunks(); ++c) {
    const Chunk& ch = chunks_[c];
    calls.join(returned[c]);
    e.kernels().combine_rows(out_at(dx, ch.t0), in_at(dx_router, ch.t0), in_at(dxe[c]),
                             ch.slot_row.as<std::int32_t>(), nullptr, ch.tokens, k, h_,
                             e.stream());
  }
  return dx;
}

// ---- verification --------------------------------------------------------------------------

MoeBlock::Gathered MoeBlock::gather(LayerContext& ctx) const {
  const MPI_Comm c = ctx.ctrl();
  const std::size_t tokens = x_.rows(), k = spec_.topk;
  const std::vector<std::int32_t> expert = ops::download_vector<std::int32_t>(expert_);
  const std::vector<std::uint8_t> kept = ops::download_vector<std::uint8_t>(kept_);
  Tensor routing(tokens, 2 * k);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < k; ++j) {
      routing.at(t, j) = static_cast<float>(expert[t * k + j]);
      routing.at(t, k + j) = kept[t * k + j];
    }
  const auto stacked = [](const std::vector<Array>& parts) {
    std::vector<Tensor> host;
    for (const Array& a : parts) host.push_back(ops::download(a));
    return concat_rows(host);
  };
  Gathered g;
  g.ep = ep_;
  g.etp = etp_;
  g.wr = gather_to_root(c, wr_);
  g.w1 = gather_to_root(c, stacked(w1_));
  g.w2 = gather_to_root(c, stacked(w2_));
  g.dwr = gather_to_root(c, dwr_);
  g.dw1 = gather_to_root(c, stacked(dw1_));
  g.dw2 = gather_to_root(c, stacked(dw2_));
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
