// The float64 forms of tp_local.hpp's MLP and attention core on whole (gathered,
// unsharded) tensors: what the TP layers' verification compares the sharded run with
// (layer_tp_mlp, layer_tp_attention, layer_tp_sp, layer_tp_sp_ep, and the MoE's experts).
#pragma once

#include <vector>

#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

// ---- MLP: Y = gelu(X W1) W2, forward and backward from dY --------------------------

struct RefMlp {
  RefTensor y, dx, dw1, dw2;
};
RefMlp ref_mlp(const RefTensor& x, const RefTensor& w1, const RefTensor& w2, const RefTensor& dy);

// ---- attention core: context = attention(X Wqkv), per head ---------------------------

struct RefAttentionCore {
  RefTensor qkv, context;
  std::vector<RefTensor> probs;
};
RefAttentionCore ref_attention_core_forward(const RefTensor& x, const RefTensor& wqkv,
                                            const AttentionShape& sh);
RefTensor ref_attention_core_backward(const RefAttentionCore& saved, const RefTensor& dcontext,
                                      const AttentionShape& sh);

}  // namespace collscope::layers
