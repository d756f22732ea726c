#include "collscope/layers/math.hpp"

#include <cblas.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace collscope::layers {
namespace {

template <class T>
T gelu_of(T x) {
  return x / 2 * (1 + std::erf(x / std::numbers::sqrt2_v<T>));
}

template <class T>
T gelu_grad_of(T x) {
  const T cdf = (1 + std::erf(x / std::numbers::sqrt2_v<T>)) / 2;
  const T pdf = std::exp(-x * x / 2) * std::numbers::inv_sqrtpi_v<T> / std::numbers::sqrt2_v<T>;
  return cdf + x * pdf;
}

// Rows and columns of op(M).
std::size_t op_rows(const auto& m, Trans t) { return t == Trans::no ? m.rows : m.cols; }
std::size_t op_cols(const auto& m, Trans t) { return t == Trans::no ? m.cols : m.rows; }

void check_inner(std::size_t ka, std::size_t kb) {
  if (ka != kb)
    throw std::logic_error("matmul: inner dimensions differ (" + std::to_string(ka) + " vs " +
                           std::to_string(kb) + ")");
}

CBLAS_TRANSPOSE cblas_op(Trans t) { return t == Trans::no ? CblasNoTrans : CblasTrans; }

int blas_int(std::size_t v) { return static_cast<int>(v); }

}  // namespace

void use_one_blas_thread() { openblas_set_num_threads(1); }

float gelu(float x) { return gelu_of(x); }
double gelu(double x) { return gelu_of(x); }
float gelu_grad(float x) { return gelu_grad_of(x); }
double gelu_grad(double x) { return gelu_grad_of(x); }

void matmul(const Tensor& a, Trans ta, const Tensor& b, Trans tb, Tensor& c, DataType storage) {
  const std::size_t m = op_rows(a, ta), k = op_cols(a, ta), n = op_cols(b, tb);
  check_inner(k, op_rows(b, tb));
  c = Tensor(m, n);
  if (m > 0 && n > 0 && k > 0)
    cblas_sgemm(CblasRowMajor, cblas_op(ta), cblas_op(tb), blas_int(m), blas_int(n),
                blas_int(k), 1.0f, a.data.data(), blas_int(std::max<std::size_t>(a.cols, 1)),
                b.data.data(), blas_int(std::max<std::size_t>(b.cols, 1)), 0.0f, c.data.data(),
                blas_int(std::max<std::size_t>(n, 1)));
  round_to_storage(c, storage);
}

Tensor matmul(const Tensor& a, Trans ta, const Tensor& b, Trans tb, DataType storage) {
  Tensor c;
  matmul(a, ta, b, tb, c, storage);
  return c;
}

Tensor gelu(const Tensor& z, DataType storage) {
  Tensor out(z.rows, z.cols);
  for (std::size_t i = 0; i < z.size(); ++i) out.data[i] = store_value(gelu(z.data[i]), storage);
  return out;
}

Tensor gelu_backward(const Tensor& da, const Tensor& z, DataType storage) {
  Tensor out(z.rows, z.cols);
  for (std::size_t i = 0; i < z.size(); ++i)
    out.data[i] = store_value(da.data[i] * gelu_grad(z.data[i]), storage);
  return out;
}

void scale(Tensor& t, float s, DataType storage) {
  for (float& v : t.data) v = store_value(v * s, storage);
}

RefTensor ref_matmul(const RefTensor& a, Trans ta, const RefTensor& b, Trans tb) {
  const std::size_t m = op_rows(a, ta), k = op_cols(a, ta), n = op_cols(b, tb);
  check_inner(k, op_rows(b, tb));
  auto av = [&](std::size_t i, std::size_t p) { return ta == Trans::no ? a.at(i, p) : a.at(p, i); };
  auto bv = [&](std::size_t p, std::size_t j) { return tb == Trans::no ? b.at(p, j) : b.at(j, p); };
  RefTensor c(m, n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::size_t p = 0; p < k; ++p) sum += av(i, p) * bv(p, j);
      c.at(i, j) = sum;
    }
  return c;
}

RefTensor ref_gelu(const RefTensor& z) {
  RefTensor out(z.rows, z.cols);
  for (std::size_t i = 0; i < z.size(); ++i) out.data[i] = gelu(z.data[i]);
  return out;
}

RefTensor ref_gelu_backward(const RefTensor& da, const RefTensor& z) {
  RefTensor out(z.rows, z.cols);
  for (std::size_t i = 0; i < z.size(); ++i) out.data[i] = da.data[i] * gelu_grad(z.data[i]);
  return out;
}

void ref_add(RefTensor& acc, const RefTensor& t) {
  for (std::size_t i = 0; i < t.size(); ++i) acc.data[i] += t.data[i];
}

void ref_scale(RefTensor& t, double s) {
  for (double& v : t.data) v *= s;
}

}  // namespace collscope::layers
