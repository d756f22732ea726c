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

#include "collscope/layers/compute/array.hpp"
#include "collscope/layers/compute/engine.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

// ---- this rank's weight shards (data.hpp), TP position `pos` of `n`, on the host ----------

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

// ---- MLP: Y = gelu(X W1) W2 (arrays in the storage dtype) ------------------------------

struct MlpSaved {
  Array z, a;  // X W1 and gelu of it
};
// Y (a partial sum when W2 is a row shard) from X [T, H], W1 [H, f], W2 [f, H].
Array mlp_forward(const Array& x, const Array& w1, const Array& w2, DataType st, MlpSaved& saved);

// The backward in two parts, so a TP layer can reduce dX while the weight gradients are
// computed (--overlap):
//   input gradient:   dA = dY W2^T, dZ = dA gelu'(Z), dX = dZ W1^T  (dX partial when W1 is
//                     a column shard)
//   weight gradients: dW2 = A^T dY, dW1 = X^T dZ
struct MlpInputGrad {
  Array dz, dx;
};
MlpInputGrad mlp_input_grad(const Array& w1, const Array& w2, const MlpSaved& saved,
                            const Array& dy, DataType st);
void mlp_weight_grads(const Array& x, const MlpSaved& saved, const Array& dy, const Array& dz,
                      DataType st, Array& dw1, Array& dw2);
struct MlpGrads {
  Array dx, dw1, dw2;
};
MlpGrads mlp_backward(const Array& x, const Array& w1, const Array& w2, const MlpSaved& saved,
                      const Array& dy, DataType st);

// ---- attention core: context = attention(X Wqkv), per head ---------------------------
//
// Each head's products run as one batched GEMM per sequence over the heads, on views of
// QKV (head g's Q: columns g 3d .. g 3d + d - 1 of the rows s B + b); the scores are
// float32, P is stored ([heads x B x S, S], block g B + b per head and sequence).

struct AttentionShape {
  std::size_t batch = 1;     // B sequences (rows s B + b)
  std::size_t head_dim = 1;  // d
  bool causal = true;
};
struct AttentionSaved {
  Array qkv;      // [T, 3h]
  Array probs;    // P, [heads x B x S, S]
  Array context;  // [T, h]: the heads' outputs side by side
};
// context [T, h] from X [T, H] and this rank's Wqkv [H, 3h] (h / d whole heads).
void attention_core_forward(const Array& x, const Array& wqkv, const AttentionShape& sh,
                            DataType st, AttentionSaved& saved);
// dQKV [T, 3h] from dcontext [T, h]; the caller forms dWqkv = X^T dQKV, dX = dQKV Wqkv^T.
// dS = P (dP - rowsum(dP P)) / sqrt d is kept as `ds_dtype`: float32 on the host (the
// host layers' arithmetic), the storage dtype on a device, where its two GEMMs run on
// the tensor cores like P V's (as FlashAttention keeps dS in bfloat16).
Array attention_core_backward(const AttentionSaved& saved, const Array& dcontext,
                              const AttentionShape& sh, DataType st, DataType ds_dtype);
// That dtype for an engine: float32 on the host, `st` on a device.
DataType attention_ds_dtype(const Engine& e, DataType st);

}  // namespace collscope::layers
