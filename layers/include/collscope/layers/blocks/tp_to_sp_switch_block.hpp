// The TP -> SP layout switch block (blocks/tp_to_sp_switch_block.cpp); layer_tp_to_sp
// (pipelines/tp_to_sp_switch.cpp) wraps it; not the TP + SP transformer layer
// (pipelines/tp_sp_transformer_layer.cpp).
//
// The transition from tensor parallelism (TP) to sequence parallelism (SP)
// (docs/textbook-formulas.md, tp-to-sp): the output projection Z = Y W of a TP group of N
// ranks whose input Y [T, K] arrives H-sharded (rank t holds the columns
// t K/N .. (t+1) K/N - 1, as a column-parallel layer leaves it) and whose output Z [T, H]
// must leave sequence-sharded (rank t holds the rows t T/N .. (t+1) T/N - 1; T = S x B
// sequence-major rows, so a sequence shard is a row block). Three ways
// (blocks/tp_to_sp_switch_block.cpp has the math of each):
//
//   allreduce       W row-sharded; allreduce of the partial Z [T,H], keep rows t
//                   (the allreduce-then-slice scheme); backward allgathers dZ
//   reduce_scatter  W row-sharded; reduce-scatter of the partial Z straight to rows t
//                   (Megatron's SP); backward allgathers dZ
//   alltoall        W replicated; all-to-all of Y from column to row shards, then the
//                   local GEMM (the all-to-all scheme, DeepSpeed-Ulysses' layout switch);
//                   backward all-to-all back, dW allreduce
//
// The block is the reusable piece: layer_tp_to_sp wraps it alone, layer_tp_sp_ep puts
// it after its attention. It communicates on ctx's TP group only, through ctx.calls(),
// at the sites plan() lists (site_prefix before each name).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/layers/compute/array.hpp"
#include "collscope/layers/framework/layer.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

enum class TpToSpScheme { allreduce, reduce_scatter, alltoall };

// --scheme allreduce, reduce_scatter or alltoall; throws UsageError for anything else.
TpToSpScheme parse_tp_to_sp_scheme(const std::string& name);
std::string_view tp_to_sp_scheme_name(TpToSpScheme scheme);

// T tokens (rows), K the input width (the whole of it; each rank holds K/N columns),
// H the output width. tp: the TP group size N. plan() needs it (the all-to-all's count
// per peer is (T/N)(K/N)); 0 means "not given", which plan() of the alltoall scheme and
// setup() refuse (std::logic_error). T and K must be divisible by N.
struct TpToSpShape {
  std::size_t tokens = 0, k = 0, h = 0;
  int tp = 0;
};

class TpToSpBlock {
 public:
  TpToSpBlock(TpToSpScheme scheme, TpToSpShape shape, std::string site_prefix);

  TpToSpScheme scheme() const { return scheme_; }
  const TpToSpShape& shape() const { return shape_; }

  // Every collective any scheme may call (the driver makes a --<coll>-alg flag for each).
  static std::vector<Collective> collectives();

  // The call sites, all on GroupKind::tp: forward's (when p.forward) then backward's.
  std::vector<PlannedCall> plan(Passes p) const;
  std::vector<PlannedCall> forward_plan() const;
  std::vector<PlannedCall> backward_plan() const;

  // Generates this rank's W: rows t K/N .. (t+1) K/N - 1 of the [K, H] weight
  // (allreduce, reduce_scatter) or all of it (alltoall), from make_block(ctx.seed(),
  // {weight_name}, ...) with scale 1/sqrt(K), in the storage dtype. Checks that the TP
  // group has shape().tp ranks.
  void setup(LayerContext& ctx, std::string_view weight_name);

  // Y_t [T, K/N] -> Z_t [T/N, H]; keeps what backward needs.
  Array forward(LayerContext& ctx, const Array& y_shard);
  // dZ_t [T/N, H] -> dY_t [T, K/N]; also sets weight_grad() (this rank's rows of dW, or
  // under alltoall the whole dW, summed over the group). Changes nothing forward saved.
  Array backward(LayerContext& ctx, const Array& dz_shard);

  const Array& weight() const { return w_; }
  const Array& weight_grad() const { return dw_; }

  // The whole W (dW) [K, H] of one TP group from every world rank's weight() (weight_grad())
  // gathered by world rank: the group's row shards one above the other, or the group's
  // first rank's copy under alltoall. As float64, for the reference.
  RefTensor whole_weight(const std::vector<Tensor>& by_rank, const std::vector<int>& group) const;
  RefTensor whole_weight_grad(const std::vector<Tensor>& by_rank,
                              const std::vector<int>& group) const;

  // The site names (with the prefix), as plan() gives them.
  std::string forward_site() const;
  std::vector<std::string> backward_sites() const;

 private:
  std::size_t n() const { return static_cast<std::size_t>(shape_.tp); }
  void check_group(LayerContext& ctx) const;
  RefTensor whole(const std::vector<Tensor>& by_rank, const std::vector<int>& group) const;

  TpToSpScheme scheme_;
  TpToSpShape shape_;
  std::string prefix_;
  Array w_, dw_;
  Array saved_;  // forward's GEMM input: Y_t [T, K/N], or Yhat_t [T/N, K] under alltoall
};

}  // namespace collscope::layers
