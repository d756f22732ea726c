// What Megatron-LM's two tensor-parallel blocks (MLP, attention; Shoeybi et al. 2019)
// share: a column-parallel input projection and a row-parallel output projection, so one
// allreduce of [T,H] forward (the output's partial sums) and one backward (the input's
// gradient), and the textbook count of them, 2 Phi per allreduce (Phi = b x s x h
// elements; docs/textbook-formulas.md, tp-mlp).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collscope/layers/compute/array.hpp"
#include "collscope/layers/framework/layer.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

// The block's call sites: forward_site when p.forward, backward_site when p.backward,
// each an allreduce SUM of `tokens_x_hidden` elements in the storage dtype on TP.
std::vector<PlannedCall> tp_block_plan(std::size_t tokens_x_hidden, Passes p,
                                       const std::string& forward_site,
                                       const std::string& backward_site);

// The textbook figure for the block (`anchor`: its section of docs/textbook-formulas.md,
// "tp-mlp" or "tp-attention"; `block`: "MLP", "attention"), with why the exact figure is
// (TP-1)/TP of it; `note` ends the explanation.
TextbookFigure tp_block_textbook_figure(std::size_t tokens_x_hidden, int tp, Passes p,
                                        DataType storage, const std::string& anchor,
                                        const std::string& block, const std::string& note);

// ---- verification: each TP group's tensors against its float64 reference --------------

// This rank's tensors of the block: the inputs X and dY [T, H] (the same on every rank of
// a TP group), its shards of the column-parallel weight (w_in: W1, Wqkv) and of the
// row-parallel one (w_out: W2, Wo), the outputs Y and dX [T, H], and its shards of the
// weight gradients.
struct TpBlockArrays {
  const Array &x, &dy, &w_in, &w_out, &y, &dx, &dw_in, &dw_out;
};

// The float64 block on a replica's whole tensors.
struct TpBlockReference {
  RefTensor y, dx, dw_in, dw_out;
};
using TpBlockReferenceFn =
    std::function<TpBlockReference(const RefTensor& x, const RefTensor& w_in,
                                   const RefTensor& w_out, const RefTensor& dy)>;

// The weight gradients' check names ("dW1", "dW2") and the longest sum behind each
// tensor (compare.hpp's reduction_length).
struct TpBlockChecks {
  const char* dw_in;
  const char* dw_out;
  std::size_t y_terms, dx_terms, dw_terms;
};

// Layer::verify of a TP block: every rank's tensors to rank 0 (over ctx.ctrl()); there,
// for each TP group, every rank's Y (p.forward) and dX (p.backward), and the weight
// gradients assembled from the shards (p.backward), against `reference` on the group's
// replica (X and dY of its first rank, the weights assembled from the shards).
std::vector<TensorCheck> verify_tp_block(LayerContext& ctx, Passes p, const TpBlockArrays& mine,
                                         const TpBlockChecks& checks,
                                         const TpBlockReferenceFn& reference);

}  // namespace collscope::layers
