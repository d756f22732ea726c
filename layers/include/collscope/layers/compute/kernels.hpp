// The element-wise and row-wise kernels of the layers, enqueued on a stream. Two
// implementations run the same bodies (compute/kernel_bodies.hpp, on hd_math.hpp,
// hd_rows.hpp and hd_routing.hpp, COLLSCOPE_HD):
//
//   host  a loop over the elements, rows or tokens (host memory, and the emulated device)
//   cuda  the same bodies as grid-stride CUDA kernels; the row reductions (softmax,
//         LayerNorm, the cross-entropy's max and sum of exponentials) one warp per row
//
// A typed buffer is a pointer and its dtype (float32 or bfloat16 for values; indices
// int32, counts int64, flags uint8). Float32 compute; every value an op stores is rounded
// once to its buffer's dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collscope/device/runtime.hpp"
#include "collscope/types.hpp"

namespace collscope::layers {

struct Out {
  void* p = nullptr;
  DataType t = DataType::float32;
};
struct In {
  const void* p = nullptr;
  DataType t = DataType::float32;
};

// The routing mode's bias (moe_routing.hpp), as the kernels take it.
struct RoutingBias {
  int mode = 0;  // 0 learned, 1 uniform, 2 skewed
  std::size_t experts = 1, topk = 1;
};

class Kernels {
 public:
  using Stream = device::Stream;
  virtual ~Kernels() = default;
  virtual std::string name() const = 0;  // "host", "cuda"

  // ---- element-wise (n elements) -----------------------------------------------------
  virtual void cast(Out out, In in, std::size_t n, Stream s) = 0;
  virtual void gelu(Out out, In z, std::size_t n, Stream s) = 0;
  // dz = da gelu'(z)
  virtual void gelu_backward(Out dz, In da, In z, std::size_t n, Stream s) = 0;
  // t *= factor
  virtual void scale(Out t, float factor, std::size_t n, Stream s) = 0;
  // out = a + b
  virtual void add(Out out, In a, In b, std::size_t n, Stream s) = 0;
  // rows x cols elements of `elem` bytes, rows ld_dst / ld_src elements apart
  virtual void copy2d(void* dst, std::size_t ld_dst, const void* src, std::size_t ld_src,
                      std::size_t rows, std::size_t cols, std::size_t elem, Stream s) = 0;
  // out[i] = sum over b < blocks of parts[b n + i], in float, rounded once
  virtual void sum_blocks(Out out, In parts, std::size_t blocks, std::size_t n, Stream s) = 0;

  // ---- attention: rows of n scores (float32), `period` rows per (head, sequence) ----------
  // p = softmax(s x scale) per row; causal: row r's keys after r % period masked (0)
  virtual void softmax(Out p, const float* scores, std::size_t rows, std::size_t n,
                       std::size_t period, bool causal, float scale, Stream s) = 0;
  // ds = p (dp - rowsum(dp p)) scale
  virtual void softmax_backward(Out ds, const float* dp, In p, std::size_t rows, std::size_t n,
                                float scale, Stream s) = 0;

  // ---- LayerNorm over rows of h (layernorm.hpp) -----------------------------------------
  virtual void layernorm(Out y, float* mean, float* rstd, In x, In gamma, In beta,
                         std::size_t rows, std::size_t h, Stream s) = 0;
  virtual void layernorm_backward(Out dx, In x, In gamma, In dy, const float* mean,
                                  const float* rstd, std::size_t rows, std::size_t h,
                                  Stream s) = 0;
  // dgamma[c] = sum_r dy xhat, dbeta[c] = sum_r dy (rows in order)
  virtual void layernorm_param_grads(Out dgamma, Out dbeta, In x, In dy, const float* mean,
                                     const float* rstd, std::size_t rows, std::size_t h,
                                     Stream s) = 0;

  // ---- vocabulary-parallel embedding and cross-entropy (pipelines/vocab_parallel.cpp) ----
  // y[t] = table[ids[t] - row0] when that row is one of the table's `table_rows`, else 0
  virtual void embedding_lookup(Out y, In table, const std::int32_t* ids, std::size_t row0,
                                std::size_t table_rows, std::size_t tokens, std::size_t h,
                                Stream s) = 0;
  // out[r] += rows[row_index[q]] for q in row_ptr[r] .. row_ptr[r+1] - 1, in that order
  virtual void add_rows_csr(float* out, In rows, const std::int32_t* row_ptr,
                            const std::int32_t* row_index, std::size_t out_rows, std::size_t h,
                            Stream s) = 0;
  virtual void row_max(float* out, In l, std::size_t rows, std::size_t n, Stream s) = 0;
  // out[r] = l[r, col[r] - col0] when that column is one of the n, else 0
  virtual void pick(float* out, In l, const std::int32_t* col, std::size_t col0,
                    std::size_t rows, std::size_t n, Stream s) = 0;
  virtual void row_sum_exp(float* out, In l, const float* max, std::size_t rows, std::size_t n,
                           Stream s) = 0;
  virtual void cross_entropy_loss(float* loss, const float* sum_exp, const float* max,
                                  const float* target_logit, std::size_t rows, Stream s) = 0;
  // dl = (softmax(l) - onehot(targets - col0)) x inv_tokens
  virtual void cross_entropy_grad(Out dl, In l, const float* max, const float* sum_exp,
                                  const std::int32_t* targets, std::size_t col0,
                                  std::size_t rows, std::size_t n, float inv_tokens,
                                  Stream s) = 0;

  // ---- MoE routing and permutation (moe_routing.hpp) --------------------------------------
  virtual void add_routing_bias(float* logits, const RoutingBias& bias, std::size_t tokens,
                                Stream s) = 0;
  // expert[t k + j], gate[t k + j]: each token's top-k and gates
  virtual void route(std::int32_t* expert, float* gate, const float* logits, std::size_t tokens,
                     std::size_t experts, std::size_t k, int order, Stream s) = 0;
  virtual void capacity(std::uint8_t* kept, const std::int32_t* expert, const float* gate,
                        std::size_t slots, std::size_t capacity, Stream s) = 0;
  virtual void expert_counts(std::int64_t* counts, const std::int32_t* expert,
                             const std::uint8_t* kept, std::size_t slots, std::size_t experts,
                             Stream s) = 0;
  // order[pos] = s for each kept slot; slot_row[s] = its pos, or -1 when dropped
  virtual void permutation(std::int32_t* order, std::int32_t* slot_row,
                           const std::int32_t* expert, const std::uint8_t* kept,
                           std::size_t slots, Stream s) = 0;
  // out[i] = in[index[i] / divisor]
  virtual void gather_rows(Out out, In in, const std::int32_t* index, std::size_t divisor,
                           std::size_t rows, std::size_t cols, Stream s) = 0;
  // out[i] = weight[index[i]] x in[index[i] / divisor]
  virtual void gather_rows_scaled(Out out, In in, const float* weight,
                                  const std::int32_t* index, std::size_t divisor,
                                  std::size_t rows, std::size_t cols, Stream s) = 0;
  // out[t] = init[t] (or 0) + sum over t's kept slots s = t k + j, in the order of their
  // rows, of weight[s] (or 1) x rows[slot_row[s]]
  virtual void combine_rows(Out out, In init, In rows, const std::int32_t* slot_row,
                            const float* weight, std::size_t tokens, std::size_t k,
                            std::size_t cols, Stream s) = 0;
  // dgate[order[i]] = dy[order[i] / k] . o[i]
  virtual void slot_dots(float* dgate, In dy, In o, const std::int32_t* order, std::size_t rows,
                         std::size_t k, std::size_t cols, Stream s) = 0;
  // dlogits [tokens, E] through the gates' softmax
  virtual void router_backward(float* dlogits, const float* logits, const std::int32_t* expert,
                               const float* dgate, std::size_t tokens, std::size_t experts,
                               std::size_t k, int order, Stream s) = 0;
};

std::unique_ptr<Kernels> make_host_kernels();
// Null in a build without CUDA.
std::unique_ptr<Kernels> make_cuda_kernels();

}  // namespace collscope::layers
