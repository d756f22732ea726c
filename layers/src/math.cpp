#include "collscope/layers/math.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

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

// One head's attention in T (float or double); `st` rounds a stored value.
template <class T, class Store>
void attention_of(const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v, bool causal,
                  Store st, Matrix<T>& p, Matrix<T>& o) {
  const std::size_t s = q.rows, d = q.cols;
  const T scale = T(1) / std::sqrt(static_cast<T>(d));
  p = Matrix<T>(s, s);
  o = Matrix<T>(s, d);
  std::vector<T> row(s);
  for (std::size_t i = 0; i < s; ++i) {
    const std::size_t keys = causal ? i + 1 : s;  // masked keys get probability 0
    T mx = -std::numeric_limits<T>::infinity();
    for (std::size_t j = 0; j < keys; ++j) {
      T dot = 0;
      for (std::size_t c = 0; c < d; ++c) dot += q.at(i, c) * k.at(j, c);
      row[j] = dot * scale;
      mx = std::max(mx, row[j]);
    }
    T sum = 0;
    for (std::size_t j = 0; j < keys; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (std::size_t j = 0; j < keys; ++j) p.at(i, j) = st(row[j] / sum);
    for (std::size_t c = 0; c < d; ++c) {
      T acc = 0;
      for (std::size_t j = 0; j < keys; ++j) acc += p.at(i, j) * v.at(j, c);
      o.at(i, c) = st(acc);
    }
  }
}

template <class T, class Store>
void attention_backward_of(const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                           const Matrix<T>& p, const Matrix<T>& dout, Store st, Matrix<T>& dq,
                           Matrix<T>& dk, Matrix<T>& dv) {
  const std::size_t s = q.rows, d = q.cols;
  const T scale = T(1) / std::sqrt(static_cast<T>(d));
  Matrix<T> ds(s, s), acc_k(s, d), acc_v(s, d);
  dq = Matrix<T>(s, d);
  for (std::size_t i = 0; i < s; ++i) {
    T dot = 0;  // rowsum(dP * P)
    for (std::size_t j = 0; j < s; ++j) {
      T dp = 0;
      for (std::size_t c = 0; c < d; ++c) dp += dout.at(i, c) * v.at(j, c);
      ds.at(i, j) = dp;
      dot += dp * p.at(i, j);
    }
    for (std::size_t j = 0; j < s; ++j) ds.at(i, j) = p.at(i, j) * (ds.at(i, j) - dot) * scale;
  }
  for (std::size_t i = 0; i < s; ++i)
    for (std::size_t c = 0; c < d; ++c) {
      T aq = 0, ak = 0, av = 0;
      for (std::size_t j = 0; j < s; ++j) {
        aq += ds.at(i, j) * k.at(j, c);
        ak += ds.at(j, i) * q.at(j, c);
        av += p.at(j, i) * dout.at(j, c);
      }
      dq.at(i, c) = st(aq);
      acc_k.at(i, c) = st(ak);
      acc_v.at(i, c) = st(av);
    }
  dk = std::move(acc_k);
  dv = std::move(acc_v);
}

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

AttentionOut attention_head(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            DataType storage) {
  AttentionOut out;
  attention_of(q, k, v, causal, [storage](float x) { return store_value(x, storage); }, out.p,
               out.o);
  return out;
}

AttentionGrads attention_head_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& p, const Tensor& dout, DataType storage) {
  AttentionGrads g;
  attention_backward_of(q, k, v, p, dout, [storage](float x) { return store_value(x, storage); },
                        g.dq, g.dk, g.dv);
  return g;
}

RefAttentionOut ref_attention_head(const RefTensor& q, const RefTensor& k, const RefTensor& v,
                                   bool causal) {
  RefAttentionOut out;
  attention_of(q, k, v, causal, [](double x) { return x; }, out.p, out.o);
  return out;
}

RefAttentionGrads ref_attention_head_backward(const RefTensor& q, const RefTensor& k,
                                              const RefTensor& v, const RefTensor& p,
                                              const RefTensor& dout) {
  RefAttentionGrads g;
  attention_backward_of(q, k, v, p, dout, [](double x) { return x; }, g.dq, g.dk, g.dv);
  return g;
}

// Float64 GEMM through OpenBLAS's dgemm: no rounding to any storage dtype.
RefTensor ref_matmul(const RefTensor& a, Trans ta, const RefTensor& b, Trans tb) {
  const std::size_t m = op_rows(a, ta), k = op_cols(a, ta), n = op_cols(b, tb);
  check_inner(k, op_rows(b, tb));
  RefTensor c(m, n);
  if (m > 0 && n > 0 && k > 0)
    cblas_dgemm(CblasRowMajor, cblas_op(ta), cblas_op(tb), blas_int(m), blas_int(n),
                blas_int(k), 1.0, a.data.data(), blas_int(std::max<std::size_t>(a.cols, 1)),
                b.data.data(), blas_int(std::max<std::size_t>(b.cols, 1)), 0.0, c.data.data(),
                blas_int(std::max<std::size_t>(n, 1)));
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
