// LayerNorm over the rows of [T, H] (each token normalised over its H features), as
// Megatron's (and PyTorch's) LayerNorm with a weight gamma [H] and a bias beta [H]:
//
//   mu_i    = (1/H) sum_j x_ij
//   var_i   = (1/H) sum_j (x_ij - mu_i)^2            (biased, as torch.nn.LayerNorm)
//   rstd_i  = 1 / sqrt(var_i + eps),  eps = 1e-5
//   xhat_ij = (x_ij - mu_i) rstd_i
//   y_ij    = gamma_j xhat_ij + beta_j
//
// Backward from dY (per row i, g_ij = dy_ij gamma_j):
//   dx_ij     = rstd_i (g_ij - mean_j(g_i) - xhat_ij mean_j(g_i * xhat_i))
//   dgamma_j  = sum_i dy_ij xhat_ij       dbeta_j = sum_i dy_ij
//
// dgamma and dbeta sum over the rows a rank holds: under sequence parallelism each TP rank
// holds T/N rows, so its sums are partial and the layer adds them up over TP.
// The formulas are hd_rows.hpp's, which the kernels run too (layers/compute).
// The float32 forms compute in float32 (mean and rstd saved in float32, as Megatron's fused
// kernel keeps them) and round y, dx, dgamma and dbeta to the storage dtype once. The
// float64 forms are the reference.
#pragma once

#include <vector>

#include "collscope/layers/math/hd_rows.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

inline constexpr double kLayerNormEps = hd::kLayerNormEpsilon;

struct LayerNormSaved {
  std::vector<float> mean, rstd;  // per row
};

// y [T, H] from x [T, H], gamma and beta [1, H].
Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, DataType storage,
                         LayerNormSaved& saved);

struct LayerNormGrads {
  Tensor dx;             // [T, H]
  Tensor dgamma, dbeta;  // [1, H]: sums over the rows of x
};
LayerNormGrads layernorm_backward(const Tensor& x, const Tensor& gamma, const LayerNormSaved& saved,
                                  const Tensor& dy, DataType storage);

struct RefLayerNormGrads {
  RefTensor dx, dgamma, dbeta;
};
RefTensor ref_layernorm_forward(const RefTensor& x, const RefTensor& gamma, const RefTensor& beta);
RefLayerNormGrads ref_layernorm_backward(const RefTensor& x, const RefTensor& gamma,
                                         const RefTensor& dy);

}  // namespace collscope::layers
