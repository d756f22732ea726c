// blocks/tp_to_sp_switch_block.cpp: the TP -> SP layout switch as a reusable block;
// layer_tp_to_sp (pipelines/tp_to_sp_switch.cpp) and layer_tp_sp_ep use it; not the TP + SP
// transformer layer (pipelines/tp_sp_transformer_layer.cpp).
//
// The TP -> SP output projection (docs/textbook-formulas.md, tp-to-sp), three ways, on a
// TP group of N ranks; rank t of the group. T tokens, K input width, H output width, T and
// K divisible by N; r = T/N rows and k = K/N columns per shard.
//
//   Y_t [T, k]  columns t k .. (t+1) k - 1 of Y      Z_t [r, H]  rows t r .. (t+1) r - 1 of Z = Y W
//
// allreduce (then slice) and reduce_scatter: W_t [k, H] = rows t k .. (t+1) k - 1 of W
//   forward                                     backward (dZ_t [r, H] given)
//   Zp   = Y_t W_t              [T, H] partial  dZ   = allgather_t dZ_t      [T, H]  <- (3)
//   allreduce:      Z = allreduce Zp  [T, H]    dY_t = dZ W_t^T              [T, k]
//                   Z_t = rows t of Z   <- (1)  dW_t = Y_t^T dZ              [k, H]
//   reduce_scatter: Z_t = reduce-scatter Zp <- (2)
//
// alltoall (all-to-all of Y): W [K, H] replicated
//   forward                                     backward
//   all-to-all: block j of Y_t (its rows        dYh_t = dZ_t W^T             [r, K]
//     j r .. (j+1) r - 1, [r, k]) to rank j;    all-to-all: column block i of dYh_t to
//     the block from rank i becomes column        rank i; the block from rank j is rows
//     block i of Yh_t [r, K]         <- (4)       j r .. of dY_t [T, k]      <- (5)
//   Z_t = Yh_t W                [r, H]          dW    = allreduce_t Yh_t^T dZ_t  [K, H]  <- (6)
//
// (1) Z = sum_t Y_t W_t; every rank gets all of Z and keeps 1/N of it (the "slice").
// (2) The same sum, each rank receiving only its rows: half the allreduce's traffic.
// (3) Z_t feeds an SP layer, so its gradient arrives row-sharded; every rank's Y_t
//     contributed to all T rows of Z, so each needs the whole dZ.
// (4) Row-major, a row block of Y_t is contiguous: the send buffer is Y_t itself; only
//     the receive side is re-laid (the "transpose").
// (5) The inverse exchange: the receive buffer is dY_t itself, the send side is re-laid.
// (6) W is replicated, so its gradient is the sum of every rank's contribution.
//
// Volume per rank, e = element size, D = T H e (ring and pairwise schedules, exact theory
// in collectives/theory/; T, K divisible by N, so no uneven blocks):
//   allreduce      fwd 2 (N-1)/N D            bwd allgather (N-1)/N D
//   reduce_scatter fwd (N-1)/N D              bwd allgather (N-1)/N D
//   alltoall       fwd (N-1) (T/N)(K/N) e     bwd the same, + allreduce of dW 2 (N-1)/N K H e
// With K = H the all-to-all sends 1/(2N) of the allreduce and 1/N of the reduce-scatter.
#include "collscope/layers/blocks/tp_to_sp_switch_block.hpp"

#include <cmath>
#include <stdexcept>

#include "collscope/errors.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/gather.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
namespace {

constexpr const char* kSchemeNames[] = {"allreduce", "reduce_scatter", "alltoall"};

// The [rows, w] block at (r0, c0) of `from` copied to (r1, c1) of `to`.
void copy_block(const Array& from, std::size_t r0, std::size_t c0, Array& to, std::size_t r1,
                std::size_t c1, std::size_t rows, std::size_t w) {
  to.engine().kernels().copy2d(to.at(r1, c1), to.cols(), from.at(r0, c0), from.cols(), rows, w,
                               dtype_size(from.dtype()), to.engine().stream());
}

}  // namespace

TpToSpScheme parse_tp_to_sp_scheme(const std::string& name) {
  for (int i = 0; i < 3; ++i)
    if (name == kSchemeNames[i]) return static_cast<TpToSpScheme>(i);
  throw UsageError("--scheme must be allreduce, reduce_scatter or alltoall, got '" + name + "'");
}

std::string_view tp_to_sp_scheme_name(TpToSpScheme scheme) {
  return kSchemeNames[static_cast<int>(scheme)];
}

TpToSpBlock::TpToSpBlock(TpToSpScheme scheme, TpToSpShape shape, std::string site_prefix)
    : scheme_(scheme), shape_(shape), prefix_(std::move(site_prefix)) {}

std::vector<Collective> TpToSpBlock::collectives() {
  return {Collective::allreduce, Collective::reduce_scatter, Collective::allgather,
          Collective::alltoall};
}

std::string TpToSpBlock::forward_site() const {
  switch (scheme_) {
    case TpToSpScheme::allreduce: return prefix_ + "fwd allreduce Z partial [T,H]";
    case TpToSpScheme::reduce_scatter: return prefix_ + "fwd reduce_scatter Z partial [T,H]";
    case TpToSpScheme::alltoall: break;
  }
  return prefix_ + "fwd alltoall Y [T,K/N]->[T/N,K]";
}

std::vector<std::string> TpToSpBlock::backward_sites() const {
  if (scheme_ != TpToSpScheme::alltoall) return {prefix_ + "bwd allgather dZ [T,H]"};
  return {prefix_ + "bwd alltoall dY [T/N,K]->[T,K/N]", prefix_ + "bwd allreduce dW [K,H]"};
}

std::vector<PlannedCall> TpToSpBlock::forward_plan() const {
  const std::size_t th = shape_.tokens * shape_.h;
  switch (scheme_) {
    case TpToSpScheme::allreduce:
      return {planned_call(forward_site(), Collective::allreduce, GroupKind::tp, th)};
    case TpToSpScheme::reduce_scatter:
      return {planned_call(forward_site(), Collective::reduce_scatter, GroupKind::tp, th)};
    case TpToSpScheme::alltoall: break;
  }
  if (shape_.tp < 1) throw std::logic_error("TpToSpBlock: TpToSpShape::tp is not set");
  const std::size_t per_peer = (shape_.tokens / n()) * (shape_.k / n());
  return {planned_call(forward_site(), Collective::alltoall, GroupKind::tp, per_peer)};
}

std::vector<PlannedCall> TpToSpBlock::backward_plan() const {
  const std::vector<std::string> sites = backward_sites();
  if (scheme_ != TpToSpScheme::alltoall)
    return {planned_call(sites[0], Collective::allgather, GroupKind::tp, shape_.tokens * shape_.h)};
  if (shape_.tp < 1) throw std::logic_error("TpToSpBlock: TpToSpShape::tp is not set");
  const std::size_t per_peer = (shape_.tokens / n()) * (shape_.k / n());
  return {planned_call(sites[0], Collective::alltoall, GroupKind::tp, per_peer),
          planned_call(sites[1], Collective::allreduce, GroupKind::tp, shape_.k * shape_.h)};
}

std::vector<PlannedCall> TpToSpBlock::plan(Passes p) const {
  std::vector<PlannedCall> calls;
  if (p.forward) calls = forward_plan();
  if (p.backward)
    for (PlannedCall& c : backward_plan()) calls.push_back(std::move(c));
  return calls;
}

void TpToSpBlock::check_group(LayerContext& ctx) const {
  const std::size_t members = ctx.position(GroupKind::tp).members.size();
  if (shape_.tp < 1 || members != n())
    throw std::logic_error("TpToSpBlock: TpToSpShape::tp is " + std::to_string(shape_.tp) +
                           ", the TP group has " + std::to_string(members) + " ranks");
  if (shape_.tokens % n() != 0 || shape_.k % n() != 0)
    throw std::logic_error("TpToSpBlock: T and K must be divisible by TP");
}

void TpToSpBlock::setup(LayerContext& ctx, std::string_view weight_name) {
  check_group(ctx);
  const std::size_t k = shape_.k / n(), t = static_cast<std::size_t>(ctx.position(GroupKind::tp).position);
  const float scale = weight_scale(shape_.k);
  const BlockSpec rows = scheme_ == TpToSpScheme::alltoall
                             ? BlockSpec{shape_.h, 0, shape_.k, 0, shape_.h}
                             : BlockSpec{shape_.h, t * k, k, 0, shape_.h};
  w_ = ops::upload(ctx.engine(), make_block(ctx.seed(), {weight_name}, rows, scale, ctx.storage()),
                   ctx.storage());
  dw_ = Array();
}

Array TpToSpBlock::forward(LayerContext& ctx, const Array& y_shard) {
  const DataType st = ctx.storage();
  const std::size_t r = shape_.tokens / n(), k = shape_.k / n();
  const std::size_t t = static_cast<std::size_t>(ctx.position(GroupKind::tp).position);
  if (scheme_ != TpToSpScheme::alltoall) {
    saved_ = ops::clone(y_shard);
    Array zp = ops::matmul(y_shard, Trans::no, w_, Trans::no, st);
    if (scheme_ == TpToSpScheme::allreduce) {
      ctx.calls().allreduce(GroupKind::tp, forward_site(), zp);
      return ops::rows(zp, t * r, r);
    }
    Array z(ctx.engine(), r, shape_.h, st);
    ctx.calls().reduce_scatter(GroupKind::tp, forward_site(), zp, z);
    return z;
  }
  Array blocks(ctx.engine(), shape_.tokens, k, st);  // N blocks [r, k], rank i's at rows i r
  ctx.calls().alltoall(GroupKind::tp, forward_site(), y_shard, blocks);
  saved_ = Array(ctx.engine(), r, shape_.k, st);  // Yh_t [r, K]: block i as columns i k
  for (std::size_t i = 0; i < n(); ++i) copy_block(blocks, i * r, 0, saved_, 0, i * k, r, k);
  return ops::matmul(saved_, Trans::no, w_, Trans::no, st);
}

Array TpToSpBlock::backward(LayerContext& ctx, const Array& dz_shard) {
  const DataType st = ctx.storage();
  const std::vector<std::string> sites = backward_sites();
  if (scheme_ != TpToSpScheme::alltoall) {
    Array dz(ctx.engine(), shape_.tokens, shape_.h, st);
    ctx.calls().allgather(GroupKind::tp, sites[0], dz_shard, dz);
    dw_ = ops::matmul(saved_, Trans::yes, dz, Trans::no, st);
    return ops::matmul(dz, Trans::no, w_, Trans::yes, st);
  }
  const std::size_t r = shape_.tokens / n(), k = shape_.k / n();
  const Array dyh = ops::matmul(dz_shard, Trans::no, w_, Trans::yes, st);  // [r, K]
  Array send(ctx.engine(), shape_.tokens, k, st);  // block i = column block i of dYh_t
  for (std::size_t i = 0; i < n(); ++i) copy_block(dyh, 0, i * k, send, i * r, 0, r, k);
  Array dy(ctx.engine(), shape_.tokens, k, st);
  ctx.calls().alltoall(GroupKind::tp, sites[0], send, dy);
  dw_ = ops::matmul(saved_, Trans::yes, dz_shard, Trans::no, st);
  ctx.calls().allreduce(GroupKind::tp, sites[1], dw_);
  return dy;
}

RefTensor TpToSpBlock::whole(const std::vector<Tensor>& by_rank,
                             const std::vector<int>& group) const {
  if (scheme_ == TpToSpScheme::alltoall)
    return to_ref(by_rank[static_cast<std::size_t>(group.front())]);
  return concat_rows(ref_parts(by_rank, group));
}

RefTensor TpToSpBlock::whole_weight(const std::vector<Tensor>& by_rank,
                                    const std::vector<int>& group) const {
  return whole(by_rank, group);
}

RefTensor TpToSpBlock::whole_weight_grad(const std::vector<Tensor>& by_rank,
                                         const std::vector<int>& group) const {
  return whole(by_rank, group);
}

}  // namespace collscope::layers
