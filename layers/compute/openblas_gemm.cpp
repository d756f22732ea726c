// The host GEMM (gemm.hpp): OpenBLAS's cblas_sgemm, on the host and behind the emulated
// device. A view that is not a contiguous float32 matrix is copied into one first
// (bfloat16 widened: exact), and a C that is not one is computed into a float matrix and
// then stored (rounded once to its dtype): so the arithmetic is the host layers' own, a
// contiguous float32 product calls sgemm on the arrays themselves.
#include <cblas.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "collscope/half.hpp"
#include "collscope/layers/compute/gemm.hpp"
#include "collscope/layers/math/hd_math.hpp"

namespace collscope::layers {
namespace {

bool contiguous_float(const MatView& v) {
  return v.dtype == DataType::float32 && v.ld == v.cols;
}

template <class T>
void widen_rows(const T* src, std::size_t rows, std::size_t cols, std::size_t ld, float* dst) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[r * cols + c] = hd::load(src[r * ld + c]);
}

// The view as a contiguous float matrix: itself, or a copy in `buf`.
const float* as_float(const MatView& v, std::vector<float>& buf) {
  if (contiguous_float(v)) return static_cast<const float*>(v.data);
  buf.resize(v.rows * v.cols);
  if (v.dtype == DataType::float32)
    widen_rows(static_cast<const float*>(v.data), v.rows, v.cols, v.ld, buf.data());
  else if (v.dtype == DataType::bfloat16)
    widen_rows(static_cast<const bfloat16_t*>(v.data), v.rows, v.cols, v.ld, buf.data());
  else
    throw std::logic_error("gemm: operands must be float32 or bfloat16");
  return buf.data();
}

template <class T>
void store_rows(const float* src, std::size_t rows, std::size_t cols, std::size_t ld, T* dst) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[r * ld + c] = hd::store<T>(src[r * cols + c]);
}

void store_float(const float* src, const MatSpan& c) {
  if (c.dtype == DataType::float32)
    store_rows(src, c.rows, c.cols, c.ld, static_cast<float*>(c.data));
  else if (c.dtype == DataType::bfloat16)
    store_rows(src, c.rows, c.cols, c.ld, static_cast<bfloat16_t*>(c.data));
  else
    throw std::logic_error("gemm: C must be float32 or bfloat16");
}

CBLAS_TRANSPOSE op_of(Trans t) { return t == Trans::no ? CblasNoTrans : CblasTrans; }

MatView shifted(MatView v, std::size_t elements) {
  v.data = static_cast<const std::byte*>(v.data) + elements * dtype_size(v.dtype);
  return v;
}

MatSpan shifted(MatSpan v, std::size_t elements) {
  v.data = static_cast<std::byte*>(v.data) + elements * dtype_size(v.dtype);
  return v;
}

class OpenBlasGemm final : public Gemm {
 public:
  std::string name() const override { return "openblas"; }

  void run(const GemmCall& g, device::Stream) override {
    check_gemm(g);
    for (std::size_t i = 0; i < g.batch; ++i)
      one(g, shifted(g.a, i * g.stride_a), shifted(g.b, i * g.stride_b),
          shifted(g.c, i * g.stride_c));
  }

 private:
  void one(const GemmCall& g, const MatView& a, const MatView& b, const MatSpan& c) {
    const std::size_t m = g.m(), n = g.n(), k = g.k();
    if (m == 0 || n == 0) return;
    const bool direct = c.dtype == DataType::float32 && c.ld == c.cols;
    float* out = direct ? static_cast<float*>(c.data) : nullptr;
    if (!direct) {
      c_buf_.assign(m * n, 0.0f);
      if (g.beta != 0) as_float({c.data, c.rows, c.cols, c.ld, c.dtype}, c_buf_);
      out = c_buf_.data();
    }
    if (k == 0) {
      for (std::size_t i = 0; i < m * n; ++i) out[i] = g.beta != 0 ? g.beta * out[i] : 0.0f;
    } else {
      const float* pa = as_float(a, a_buf_);
      const float* pb = as_float(b, b_buf_);
      cblas_sgemm(CblasRowMajor, op_of(g.ta), op_of(g.tb), static_cast<int>(m),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, pa, static_cast<int>(a.cols),
                  pb, static_cast<int>(b.cols), g.beta, out, static_cast<int>(n));
    }
    if (!direct) store_float(out, c);
  }

  std::vector<float> a_buf_, b_buf_, c_buf_;
};

}  // namespace

void check_gemm(const GemmCall& g) {
  const std::size_t kb = g.tb == Trans::no ? g.b.rows : g.b.cols;
  if (g.k() != kb)
    throw std::logic_error("gemm: inner dimensions differ (" + std::to_string(g.k()) + " vs " +
                           std::to_string(kb) + ")");
  if (g.c.rows != g.m() || g.c.cols != g.n())
    throw std::logic_error("gemm: C is " + std::to_string(g.c.rows) + " x " +
                           std::to_string(g.c.cols) + ", the product " + std::to_string(g.m()) +
                           " x " + std::to_string(g.n()));
  if (g.a.ld < g.a.cols || g.b.ld < g.b.cols || g.c.ld < g.c.cols)
    throw std::logic_error("gemm: a leading dimension below the columns");
}

std::unique_ptr<Gemm> make_openblas_gemm() { return std::make_unique<OpenBlasGemm>(); }

}  // namespace collscope::layers
