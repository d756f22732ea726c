// Local math of the layers: float32 ops for the sharded layer (GEMM through OpenBLAS's
// cblas_sgemm) and float64 ops for the unsharded reference (cblas_dgemm and loops in double).
// Each float32 op rounds its result to the storage dtype once (tensor.hpp).
//
// GeLU is the exact one (PyTorch's and Megatron's default, not the tanh approximation):
//   gelu(x)  = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2))
//   gelu'(x) = Phi(x) + x * phi(x),   phi(x) = exp(-x^2/2) / sqrt(2 pi)
#pragma once

#include <memory>

#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

enum class Trans { no, yes };

// OpenBLAS runs one thread per process: ranks share the node's cores.
void use_one_blas_thread();
// n threads while it lives (the verification of a device run's shape, on rank 0), free to
// run on every core online; one thread, and each thread's own cores, again after. Open MPI
// binds a rank to one core by default, and the BLAS threads, made when the library loaded,
// inherit it: bound, n threads would share that core (on an H200 node the float64
// reference of layer_tp_mlp at its device shape took minutes so).
class BlasThreadsOnAllCores {
 public:
  explicit BlasThreadsOnAllCores(int n);
  ~BlasThreadsOnAllCores();
  BlasThreadsOnAllCores(const BlasThreadsOnAllCores&) = delete;
  BlasThreadsOnAllCores& operator=(const BlasThreadsOnAllCores&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

// C = op(A) op(B), op(M) = M or M^T; C is resized. Float32 accumulation, then C is
// rounded to `storage`.
void matmul(const Tensor& a, Trans ta, const Tensor& b, Trans tb, Tensor& c, DataType storage);
Tensor matmul(const Tensor& a, Trans ta, const Tensor& b, Trans tb, DataType storage);

Tensor gelu(const Tensor& z, DataType storage);
// dZ = dA * gelu'(Z), element-wise.
Tensor gelu_backward(const Tensor& da, const Tensor& z, DataType storage);
// t *= s, element-wise, rounded to storage.
void scale(Tensor& t, float s, DataType storage);

// The float64 reference: the same ops, no rounding.
RefTensor ref_matmul(const RefTensor& a, Trans ta, const RefTensor& b, Trans tb);
RefTensor ref_gelu(const RefTensor& z);
RefTensor ref_gelu_backward(const RefTensor& da, const RefTensor& z);
void ref_add(RefTensor& acc, const RefTensor& t);  // acc += t
void ref_scale(RefTensor& t, double s);

// Softmax attention of one head over one sequence (layer_tp_attention):
//   Q, K, V [S, d];  scores = Q K^T / sqrt(d) [S, S] (causal: key j > query i masked to
//   -inf);  P = softmax over each row [S, S];  O = P V [S, d].
// Backward from dO [S, d], with the saved P:
//   dV = P^T dO;  dP = dO V^T;  dScores = P * (dP - rowsum(dP * P));
//   dQ = dScores K / sqrt(d);  dK = dScores^T Q / sqrt(d).
// The float32 forms compute in float32 and round P, O and each gradient to `storage` once.
struct AttentionOut {
  Tensor p, o;
};
struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionOut attention_head(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            DataType storage);
AttentionGrads attention_head_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& p, const Tensor& dout, DataType storage);
struct RefAttentionOut {
  RefTensor p, o;
};
struct RefAttentionGrads {
  RefTensor dq, dk, dv;
};
RefAttentionOut ref_attention_head(const RefTensor& q, const RefTensor& k, const RefTensor& v,
                                   bool causal);
RefAttentionGrads ref_attention_head_backward(const RefTensor& q, const RefTensor& k,
                                              const RefTensor& v, const RefTensor& p,
                                              const RefTensor& dout);

// Scalar forms, shared by both and tested on their own.
float gelu(float x);
double gelu(double x);
float gelu_grad(float x);
double gelu_grad(double x);

}  // namespace collscope::layers
