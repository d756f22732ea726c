#include "collscope/layers/math/math.hpp"

#include <cblas.h>
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include "collscope/layers/math/hd_math.hpp"
#include "collscope/layers/math/hd_rows.hpp"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace collscope::layers {
namespace {

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

// C = op(A) op(B) in T, no rounding: sgemm for float, dgemm for double.
template <class T>
Matrix<T> gemm(const Matrix<T>& a, Trans ta, const Matrix<T>& b, Trans tb) {
  const std::size_t m = op_rows(a, ta), k = op_cols(a, ta), n = op_cols(b, tb);
  check_inner(k, op_rows(b, tb));
  Matrix<T> c(m, n);
  if (m == 0 || n == 0 || k == 0) return c;
  const auto blas = [](auto... args) {
    if constexpr (std::is_same_v<T, float>) cblas_sgemm(args...);
    else cblas_dgemm(args...);
  };
  blas(CblasRowMajor, cblas_op(ta), cblas_op(tb), blas_int(m), blas_int(n), blas_int(k), T(1),
       a.data.data(), blas_int(a.cols), b.data.data(), blas_int(b.cols), T(0), c.data.data(),
       blas_int(n));
  return c;
}

template <class T, class Store>
Matrix<T> stored(Matrix<T> m, Store st) {
  for (T& x : m.data) x = st(x);
  return m;
}

// One head's attention in T (float or double); `st` rounds a stored value. The scores
// and their gradient are intermediates (never stored); P, O and the gradients are.
template <class T, class Store>
void attention_of(const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v, bool causal,
                  Store st, Matrix<T>& p, Matrix<T>& o) {
  const std::size_t s = q.rows;
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols));
  p = gemm(q, Trans::no, k, Trans::yes);  // the scores, then the probabilities in place
  for (std::size_t i = 0; i < s; ++i) {
    const std::size_t keys = causal ? i + 1 : s;  // masked keys get probability 0
    T* row = p.data.data() + i * s;
    hd::softmax_row<T>(row, row, s, keys, scale, st);
  }
  o = stored(gemm(p, Trans::no, v, Trans::no), st);
}

// dP = dO V^T; dS = P * (dP - rowsum(dP * P)) / sqrt d; dQ = dS K; dK = dS^T Q; dV = P^T dO.
template <class T, class Store>
void attention_backward_of(const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                           const Matrix<T>& p, const Matrix<T>& dout, Store st, Matrix<T>& dq,
                           Matrix<T>& dk, Matrix<T>& dv) {
  const std::size_t s = q.rows;
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols));
  Matrix<T> ds = gemm(dout, Trans::no, v, Trans::yes);  // dP, then dS in place (float)
  for (std::size_t i = 0; i < s; ++i) {
    T* row = ds.data.data() + i * s;
    hd::softmax_backward_row<T>(row, p.data.data() + i * s, row, s, scale, hd::Store<T>{});
  }
  dq = stored(gemm(ds, Trans::no, k, Trans::no), st);
  dk = stored(gemm(ds, Trans::yes, q, Trans::no), st);
  dv = stored(gemm(p, Trans::yes, dout, Trans::no), st);
}

}  // namespace

void use_one_blas_thread() { openblas_set_num_threads(1); }

// Each thread of this process (its ids under /proc/self/task) and the cores it may run on.
struct BlasThreadsOnAllCores::Saved {
  std::vector<std::pair<pid_t, cpu_set_t>> masks;
};

BlasThreadsOnAllCores::BlasThreadsOnAllCores(int n) : saved_(std::make_unique<Saved>()) {
  cpu_set_t all;
  CPU_ZERO(&all);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < online && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &all);
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(tasks)) {
      const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      cpu_set_t mask;
      if (tid <= 0 || sched_getaffinity(tid, sizeof mask, &mask) != 0) continue;
      // A cpuset narrower than `all` (a batch job's) keeps the thread within it, or refuses.
      if (sched_setaffinity(tid, sizeof all, &all) == 0) saved_->masks.emplace_back(tid, mask);
    }
    closedir(tasks);
  }
  openblas_set_num_threads(n);
}

BlasThreadsOnAllCores::~BlasThreadsOnAllCores() {
  openblas_set_num_threads(1);
  for (auto& [tid, mask] : saved_->masks) sched_setaffinity(tid, sizeof mask, &mask);
}

float gelu(float x) { return hd::gelu(x); }
double gelu(double x) { return hd::gelu(x); }
float gelu_grad(float x) { return hd::gelu_grad(x); }
double gelu_grad(double x) { return hd::gelu_grad(x); }

void matmul(const Tensor& a, Trans ta, const Tensor& b, Trans tb, Tensor& c, DataType storage) {
  c = gemm(a, ta, b, tb);
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
  return gemm(a, ta, b, tb);
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
