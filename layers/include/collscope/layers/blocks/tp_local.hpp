// The local (per-rank) compute of the tensor-parallel blocks, shared by every layer that
// has them (layer_tp_mlp, layer_tp_attention, layer_tp_sp, layer_tp_sp_ep): the MLP's
// fc1 -> GeLU -> fc2 on a column/row shard pair, and attention's QKV projection plus
// softmax attention per local head. No communication here: the layers put their
// collectives around these. Their float64 forms on whole tensors, for the reference, are in
// reference/tp_local_reference.hpp.
//
// Attention layout (Megatron-LM, Shoeybi et al. 2019, section 3): T = S x B rows,
// row s B + b is token s of sequence b; Wqkv holds, per head g, [q | k | v] (d columns
// each) at columns g 3d .. g 3d + 3d - 1, so a rank with whole heads holds one contiguous
// column block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

// ---- this rank's weight shards (data.hpp), TP position `pos` of `n` ----------------

// Wqkv [H, 3H]: the columns of heads pos n_t .. (pos+1) n_t - 1, [H, 3H/n].
Tensor qkv_weight_shard(std::uint64_t seed, std::size_t h, std::size_t pos, std::size_t n,
                        DataType st);
// Wo [H, H] (the attention's output projection): rows pos H/n .., [H/n, H].
Tensor out_proj_weight_shard(std::uint64_t seed, std::size_t h, std::size_t pos, std::size_t n,
                             DataType st);
// W1 [H, F]: columns pos F/n .., [H, F/n];  W2 [F, H]: rows pos F/n .., [F/n, H].
Tensor fc1_weight_shard(std::uint64_t seed, std::size_t h, std::size_t f, std::size_t pos,
                        std::size_t n, DataType st);
Tensor fc2_weight_shard(std::uint64_t seed, std::size_t h, std::size_t f, std::size_t pos,
                        std::size_t n, DataType st);

// ---- MLP: Y = gelu(X W1) W2 ----------------------------------------------------------

struct MlpSaved {
  Tensor z, a;  // X W1 and gelu of it
};
// Y (a partial sum when W2 is a row shard) from X [T, H], W1 [H, f], W2 [f, H].
Tensor mlp_forward(const Tensor& x, const Tensor& w1, const Tensor& w2, DataType st,
                   MlpSaved& saved);
struct MlpGrads {
  Tensor dx, dw1, dw2;  // dx: a partial sum when W1 is a column shard
};
MlpGrads mlp_backward(const Tensor& x, const Tensor& w1, const Tensor& w2, const MlpSaved& saved,
                      const Tensor& dy, DataType st);

// ---- attention core: context = attention(X Wqkv), per head ---------------------------

struct AttentionShape {
  std::size_t batch = 1;     // B sequences (rows s B + b)
  std::size_t head_dim = 1;  // d
  bool causal = true;
};
struct AttentionSaved {
  Tensor qkv;                 // [T, 3h]
  std::vector<Tensor> probs;  // P per (local head g, sequence b), index g B + b
  Tensor context;             // [T, h]: the heads' outputs side by side
};
// context [T, h] from X [T, H] and this rank's Wqkv [H, 3h] (h / d whole heads).
void attention_core_forward(const Tensor& x, const Tensor& wqkv, const AttentionShape& sh,
                            DataType st, AttentionSaved& saved);
// dQKV [T, 3h] from dcontext [T, h]; the caller forms dWqkv = X^T dQKV, dX = dQKV Wqkv^T.
Tensor attention_core_backward(const AttentionSaved& saved, const Tensor& dcontext,
                               const AttentionShape& sh, DataType st);

}  // namespace collscope::layers
