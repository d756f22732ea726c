#include "collscope/layers/blocks/tp_local.hpp"

#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/head_blocks.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
using head_blocks::head_block;
using head_blocks::HeadQkv;
using head_blocks::put_head_block;
using head_blocks::put_head_grads;

Tensor qkv_weight_shard(std::uint64_t seed, std::size_t h, std::size_t pos, std::size_t n,
                        DataType st) {
  const std::size_t cols = 3 * h / n;
  return make_block(seed, {"Wqkv"}, {3 * h, 0, h, pos * cols, cols}, weight_scale(h), st);
}

Tensor out_proj_weight_shard(std::uint64_t seed, std::size_t h, std::size_t pos, std::size_t n,
                             DataType st) {
  const std::size_t rows = h / n;
  return make_block(seed, {"Wo"}, {h, pos * rows, rows, 0, h}, weight_scale(h), st);
}

Tensor fc1_weight_shard(std::uint64_t seed, std::size_t h, std::size_t f, std::size_t pos,
                        std::size_t n, DataType st) {
  const std::size_t cols = f / n;
  return make_block(seed, {"W1"}, {f, 0, h, pos * cols, cols}, weight_scale(h), st);
}

Tensor fc2_weight_shard(std::uint64_t seed, std::size_t h, std::size_t f, std::size_t pos,
                        std::size_t n, DataType st) {
  const std::size_t rows = f / n;
  return make_block(seed, {"W2"}, {h, pos * rows, rows, 0, h}, weight_scale(f), st);
}

Tensor mlp_forward(const Tensor& x, const Tensor& w1, const Tensor& w2, DataType st,
                   MlpSaved& saved) {
  matmul(x, Trans::no, w1, Trans::no, saved.z, st);
  saved.a = gelu(saved.z, st);
  return matmul(saved.a, Trans::no, w2, Trans::no, st);
}

MlpGrads mlp_backward(const Tensor& x, const Tensor& w1, const Tensor& w2, const MlpSaved& saved,
                      const Tensor& dy, DataType st) {
  const Tensor dz = gelu_backward(matmul(dy, Trans::no, w2, Trans::yes, st), saved.z, st);
  MlpGrads g;
  matmul(saved.a, Trans::yes, dy, Trans::no, g.dw2, st);
  matmul(x, Trans::yes, dz, Trans::no, g.dw1, st);
  matmul(dz, Trans::no, w1, Trans::yes, g.dx, st);
  return g;
}

void attention_core_forward(const Tensor& x, const Tensor& wqkv, const AttentionShape& sh,
                            DataType st, AttentionSaved& saved) {
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = wqkv.cols / (3 * d);
  matmul(x, Trans::no, wqkv, Trans::no, saved.qkv, st);
  saved.context = Tensor(x.rows, heads * d);
  saved.probs.assign(heads * nb, Tensor());
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const HeadQkv<float> h(saved.qkv, nb, b, g, d);
      AttentionOut out = attention_head(h.q, h.k, h.v, sh.causal, st);
      put_head_block(saved.context, nb, b, g * d, out.o);
      saved.probs[g * nb + b] = std::move(out.p);
    }
}

Tensor attention_core_backward(const AttentionSaved& saved, const Tensor& dcontext,
                               const AttentionShape& sh, DataType st) {
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = saved.qkv.cols / (3 * d);
  Tensor dqkv(saved.qkv.rows, saved.qkv.cols);
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const HeadQkv<float> h(saved.qkv, nb, b, g, d);
      put_head_grads(dqkv, nb, b, g, d,
                     attention_head_backward(h.q, h.k, h.v, saved.probs[g * nb + b],
                                             head_block(dcontext, nb, b, g * d, d), st));
    }
  return dqkv;
}

}  // namespace collscope::layers
