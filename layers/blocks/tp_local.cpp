#include "collscope/layers/blocks/tp_local.hpp"

#include <cmath>

#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/math.hpp"

namespace collscope::layers {

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

Array mlp_forward(const Array& x, const Array& w1, const Array& w2, DataType st,
                  MlpSaved& saved) {
  saved.z = ops::matmul(x, Trans::no, w1, Trans::no, st);
  saved.a = ops::gelu(saved.z, st);
  return ops::matmul(saved.a, Trans::no, w2, Trans::no, st);
}

MlpInputGrad mlp_input_grad(const Array& w1, const Array& w2, const MlpSaved& saved,
                            const Array& dy, DataType st) {
  MlpInputGrad g;
  g.dz = ops::gelu_backward(ops::matmul(dy, Trans::no, w2, Trans::yes, st), saved.z, st);
  g.dx = ops::matmul(g.dz, Trans::no, w1, Trans::yes, st);
  return g;
}

void mlp_weight_grads(const Array& x, const MlpSaved& saved, const Array& dy, const Array& dz,
                      DataType st, Array& dw1, Array& dw2) {
  dw2 = ops::matmul(saved.a, Trans::yes, dy, Trans::no, st);
  dw1 = ops::matmul(x, Trans::yes, dz, Trans::no, st);
}

MlpGrads mlp_backward(const Array& x, const Array& w1, const Array& w2, const MlpSaved& saved,
                      const Array& dy, DataType st) {
  MlpInputGrad in = mlp_input_grad(w1, w2, saved, dy, st);
  MlpGrads g;
  mlp_weight_grads(x, saved, dy, in.dz, st, g.dw1, g.dw2);
  g.dx = std::move(in.dx);
  return g;
}

namespace {

// The views of one sequence b's rows (s B + b) of a [T, w] array: `cols` columns from
// c0 of head 0, the next head `stride` columns on (a batch over the heads).
struct HeadViews {
  std::size_t batch, seq;  // B, S
};

MatView head_view(const Array& a, const HeadViews& hv, std::size_t b, std::size_t c0,
                  std::size_t cols) {
  return {a.at(b, c0), hv.seq, cols, hv.batch * a.cols(), a.dtype()};
}

MatSpan head_span(Array& a, const HeadViews& hv, std::size_t b, std::size_t c0,
                  std::size_t cols) {
  return {a.at(b, c0), hv.seq, cols, hv.batch * a.cols(), a.dtype()};
}

// Block g B + b ([S, S]) of a per-(head, sequence) stack, the next head B S S on.
MatView block_view(const Array& a, const HeadViews& hv, std::size_t b) {
  return {a.at(b * hv.seq), hv.seq, hv.seq, hv.seq, a.dtype()};
}

MatSpan block_span(Array& a, const HeadViews& hv, std::size_t b) {
  return {a.at(b * hv.seq), hv.seq, hv.seq, hv.seq, a.dtype()};
}

// One batched product over the heads: a, b, c each move by its stride per head.
void heads_gemm(Engine& e, std::size_t heads, MatView a, Trans ta, std::size_t stride_a,
                MatView b, Trans tb, std::size_t stride_b, MatSpan c, std::size_t stride_c) {
  e.run_gemm(GemmCall{.a = a, .ta = ta, .b = b, .tb = tb, .c = c, .batch = heads,
                      .stride_a = stride_a, .stride_b = stride_b, .stride_c = stride_c});
}

float softmax_scale(std::size_t d) { return 1.0f / std::sqrt(static_cast<float>(d)); }

}  // namespace

void attention_core_forward(const Array& x, const Array& wqkv, const AttentionShape& sh,
                            DataType st, AttentionSaved& saved) {
  Engine& e = x.engine();
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = wqkv.cols() / (3 * d);
  const HeadViews hv{nb, x.rows() / nb};
  const std::size_t s = hv.seq, block = nb * s * s;  // the next head's block
  saved.qkv = ops::matmul(x, Trans::no, wqkv, Trans::no, st);
  Array scores(e, heads * nb * s, s, DataType::float32);
  saved.probs = Array(e, heads * nb * s, s, st);
  saved.context = Array(e, x.rows(), heads * d, st);
  for (std::size_t b = 0; b < nb; ++b)  // scores = Q K^T
    heads_gemm(e, heads, head_view(saved.qkv, hv, b, 0, d), Trans::no, 3 * d,
               head_view(saved.qkv, hv, b, d, d), Trans::yes, 3 * d,
               block_span(scores, hv, b), block);
  e.kernels().softmax({saved.probs.data(), st}, scores.as<float>(), scores.rows(), s, s, sh.causal,
                      softmax_scale(d), e.stream());
  for (std::size_t b = 0; b < nb; ++b)  // O = P V
    heads_gemm(e, heads, block_view(saved.probs, hv, b), Trans::no, block,
               head_view(saved.qkv, hv, b, 2 * d, d), Trans::no, 3 * d,
               head_span(saved.context, hv, b, 0, d), d);
}

Array attention_core_backward(const AttentionSaved& saved, const Array& dcontext,
                              const AttentionShape& sh, DataType st, DataType ds_dtype) {
  Engine& e = dcontext.engine();
  const std::size_t d = sh.head_dim, nb = sh.batch, heads = saved.qkv.cols() / (3 * d);
  const HeadViews hv{nb, saved.qkv.rows() / nb};
  const std::size_t s = hv.seq, block = nb * s * s;
  Array dp(e, heads * nb * s, s, DataType::float32);
  for (std::size_t b = 0; b < nb; ++b)  // dP = dO V^T
    heads_gemm(e, heads, head_view(dcontext, hv, b, 0, d), Trans::no, d,
               head_view(saved.qkv, hv, b, 2 * d, d), Trans::yes, 3 * d, block_span(dp, hv, b),
               block);
  // dS in place of dP when it stays float32.
  Array ds_own = ds_dtype == DataType::float32 ? Array() : Array(e, dp.rows(), s, ds_dtype);
  Array& ds = ds_dtype == DataType::float32 ? dp : ds_own;
  e.kernels().softmax_backward({ds.data(), ds_dtype}, dp.as<float>(),
                               {saved.probs.data(), saved.probs.dtype()}, dp.rows(), s,
                               softmax_scale(d), e.stream());
  Array dqkv(e, saved.qkv.rows(), saved.qkv.cols(), st);
  for (std::size_t b = 0; b < nb; ++b) {
    // dQ = dS K, dK = dS^T Q, dV = P^T dO
    heads_gemm(e, heads, block_view(ds, hv, b), Trans::no, block,
               head_view(saved.qkv, hv, b, d, d), Trans::no, 3 * d,
               head_span(dqkv, hv, b, 0, d), 3 * d);
    heads_gemm(e, heads, block_view(ds, hv, b), Trans::yes, block,
               head_view(saved.qkv, hv, b, 0, d), Trans::no, 3 * d,
               head_span(dqkv, hv, b, d, d), 3 * d);
    heads_gemm(e, heads, block_view(saved.probs, hv, b), Trans::yes, block,
               head_view(dcontext, hv, b, 0, d), Trans::no, d,
               head_span(dqkv, hv, b, 2 * d, d), 3 * d);
  }
  return dqkv;
}

DataType attention_ds_dtype(const Engine& e, DataType st) {
  return e.memory() == MemoryKind::device ? st : DataType::float32;
}

}  // namespace collscope::layers
