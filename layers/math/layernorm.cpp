#include "collscope/layers/math/layernorm.hpp"

#include <cmath>
#include <stdexcept>

#include "collscope/layers/math/hd_rows.hpp"

namespace collscope::layers {
namespace {

template <class T>
void check_shapes(const Matrix<T>& x, const Matrix<T>& gamma) {
  if (gamma.rows != 1 || gamma.cols != x.cols || x.cols == 0)
    throw std::logic_error("layernorm: gamma must be [1, H] with H = the columns of x (H > 0)");
}

// Mean and 1 / sqrt(var + eps) of row r, in T (hd_rows.hpp, as the kernels).
template <class T>
void row_stats(const Matrix<T>& x, std::size_t r, T& mean, T& rstd) {
  hd::layernorm_stats<T>(&x.data[r * x.cols], x.cols, mean, rstd);
}

// dx of row r (written into dx), accumulating dgamma and dbeta: the header's formulas.
template <class T>
void row_backward(const Matrix<T>& x, const Matrix<T>& gamma, const Matrix<T>& dy, std::size_t r,
                  T mean, T rstd, Matrix<T>& dx, std::vector<T>& dgamma, std::vector<T>& dbeta) {
  const std::size_t h = x.cols;
  hd::layernorm_backward_row<T>(&x.data[r * h], gamma.data.data(), &dy.data[r * h], h, mean, rstd,
                                &dx.data[r * h], hd::Store<T>{});
  for (std::size_t c = 0; c < h; ++c) {
    dgamma[c] += dy.at(r, c) * hd::layernorm_xhat(x.at(r, c), mean, rstd);
    dbeta[c] += dy.at(r, c);
  }
}

template <class T>
Matrix<T> row_of(const std::vector<T>& v) {
  Matrix<T> m(1, v.size());
  m.data = v;
  return m;
}

}  // namespace

Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, DataType storage,
                         LayerNormSaved& saved) {
  check_shapes(x, gamma);
  check_shapes(x, beta);
  Tensor y(x.rows, x.cols);
  saved.mean.assign(x.rows, 0.0f);
  saved.rstd.assign(x.rows, 0.0f);
  for (std::size_t r = 0; r < x.rows; ++r) {
    row_stats(x, r, saved.mean[r], saved.rstd[r]);
    for (std::size_t c = 0; c < x.cols; ++c)
      y.at(r, c) = hd::layernorm_value(x.at(r, c), saved.mean[r], saved.rstd[r], gamma.at(0, c),
                                       beta.at(0, c));
  }
  round_to_storage(y, storage);
  return y;
}

LayerNormGrads layernorm_backward(const Tensor& x, const Tensor& gamma, const LayerNormSaved& saved,
                                  const Tensor& dy, DataType storage) {
  check_shapes(x, gamma);
  if (!dy.same_shape(x) || saved.mean.size() != x.rows || saved.rstd.size() != x.rows)
    throw std::logic_error("layernorm_backward: dy or the saved statistics do not match x");
  LayerNormGrads g;
  g.dx = Tensor(x.rows, x.cols);
  std::vector<float> dgamma(x.cols, 0.0f), dbeta(x.cols, 0.0f);
  for (std::size_t r = 0; r < x.rows; ++r)
    row_backward(x, gamma, dy, r, saved.mean[r], saved.rstd[r], g.dx, dgamma, dbeta);
  g.dgamma = row_of(dgamma);
  g.dbeta = row_of(dbeta);
  round_to_storage(g.dx, storage);
  round_to_storage(g.dgamma, storage);
  round_to_storage(g.dbeta, storage);
  return g;
}

RefTensor ref_layernorm_forward(const RefTensor& x, const RefTensor& gamma, const RefTensor& beta) {
  check_shapes(x, gamma);
  check_shapes(x, beta);
  RefTensor y(x.rows, x.cols);
  for (std::size_t r = 0; r < x.rows; ++r) {
    double mean = 0, rstd = 0;
    row_stats(x, r, mean, rstd);
    for (std::size_t c = 0; c < x.cols; ++c)
      y.at(r, c) = hd::layernorm_value(x.at(r, c), mean, rstd, gamma.at(0, c), beta.at(0, c));
  }
  return y;
}

RefLayerNormGrads ref_layernorm_backward(const RefTensor& x, const RefTensor& gamma,
                                         const RefTensor& dy) {
  check_shapes(x, gamma);
  if (!dy.same_shape(x)) throw std::logic_error("ref_layernorm_backward: dy does not match x");
  RefLayerNormGrads g;
  g.dx = RefTensor(x.rows, x.cols);
  std::vector<double> dgamma(x.cols, 0.0), dbeta(x.cols, 0.0);
  for (std::size_t r = 0; r < x.rows; ++r) {
    double mean = 0, rstd = 0;
    row_stats(x, r, mean, rstd);
    row_backward(x, gamma, dy, r, mean, rstd, g.dx, dgamma, dbeta);
  }
  g.dgamma = row_of(dgamma);
  g.dbeta = row_of(dbeta);
  return g;
}

}  // namespace collscope::layers
