#include "collscope/layers/blocks/tp_local.hpp"

#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {
namespace {

// The rows of sequence b (tokens s B + b) and columns [c0, c0 + d) of m: [S, d].
template <class T>
Matrix<T> head_block(const Matrix<T>& m, std::size_t batch, std::size_t b, std::size_t c0,
                     std::size_t d) {
  Matrix<T> out(m.rows / batch, d);
  for (std::size_t s = 0; s < out.rows; ++s)
    for (std::size_t c = 0; c < d; ++c) out.at(s, c) = m.at(s * batch + b, c0 + c);
  return out;
}

template <class T>
void put_head_block(Matrix<T>& m, std::size_t batch, std::size_t b, std::size_t c0,
                    const Matrix<T>& blk) {
  for (std::size_t s = 0; s < blk.rows; ++s)
    for (std::size_t c = 0; c < blk.cols; ++c) m.at(s * batch + b, c0 + c) = blk.at(s, c);
}

// q, k, v of local head g, sequence b.
template <class T>
struct HeadQkv {
  Matrix<T> q, k, v;
  HeadQkv(const Matrix<T>& qkv, std::size_t batch, std::size_t b, std::size_t g, std::size_t d)
      : q(head_block(qkv, batch, b, g * 3 * d, d)),
        k(head_block(qkv, batch, b, g * 3 * d + d, d)),
        v(head_block(qkv, batch, b, g * 3 * d + 2 * d, d)) {}
};

template <class T, class Grads>
void put_head_grads(Matrix<T>& dqkv, std::size_t batch, std::size_t b, std::size_t g,
                    std::size_t d, const Grads& gr) {
  put_head_block(dqkv, batch, b, g * 3 * d, gr.dq);
  put_head_block(dqkv, batch, b, g * 3 * d + d, gr.dk);
  put_head_block(dqkv, batch, b, g * 3 * d + 2 * d, gr.dv);
}

}  // namespace

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

RefMlp ref_mlp(const RefTensor& x, const RefTensor& w1, const RefTensor& w2, const RefTensor& dy) {
  const RefTensor z = ref_matmul(x, Trans::no, w1, Trans::no);
  const RefTensor a = ref_gelu(z);
  const RefTensor dz = ref_gelu_backward(ref_matmul(dy, Trans::no, w2, Trans::yes), z);
  return {ref_matmul(a, Trans::no, w2, Trans::no), ref_matmul(dz, Trans::no, w1, Trans::yes),
          ref_matmul(x, Trans::yes, dz, Trans::no), ref_matmul(a, Trans::yes, dy, Trans::no)};
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

RefAttentionCore ref_attention_core_forward(const RefTensor& x, const RefTensor& wqkv,
                                            const AttentionShape& sh) {
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = wqkv.cols / (3 * d);
  RefAttentionCore saved;
  saved.qkv = ref_matmul(x, Trans::no, wqkv, Trans::no);
  saved.context = RefTensor(x.rows, heads * d);
  saved.probs.assign(heads * nb, RefTensor());
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const HeadQkv<double> h(saved.qkv, nb, b, g, d);
      RefAttentionOut out = ref_attention_head(h.q, h.k, h.v, sh.causal);
      put_head_block(saved.context, nb, b, g * d, out.o);
      saved.probs[g * nb + b] = std::move(out.p);
    }
  return saved;
}

RefTensor ref_attention_core_backward(const RefAttentionCore& saved, const RefTensor& dcontext,
                                      const AttentionShape& sh) {
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = saved.qkv.cols / (3 * d);
  RefTensor dqkv(saved.qkv.rows, saved.qkv.cols);
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const HeadQkv<double> h(saved.qkv, nb, b, g, d);
      put_head_grads(dqkv, nb, b, g, d,
                     ref_attention_head_backward(h.q, h.k, h.v, saved.probs[g * nb + b],
                                                 head_block(dcontext, nb, b, g * d, d)));
    }
  return dqkv;
}

}  // namespace collscope::layers
