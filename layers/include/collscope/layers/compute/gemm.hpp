// Matrix products of the layers: C = op(A) op(B) (+ beta C), row-major, on views of
// arrays (a block of columns of a wider array: a head's Q inside QKV), optionally a
// batch of them at fixed strides. Float32 accumulation ("compute"), inputs stored as
// float32 or bfloat16 (A and B alike), C stored as float32 or bfloat16, rounded once.
//
//   openblas  the host (and the emulated device): cblas_sgemm on float copies of the
//             views where they are not already contiguous float32 (a bfloat16 view is
//             widened, exactly), C rounded to its dtype after the product: the host
//             layers' arithmetic, unchanged
//   cublas    a GPU: cublasGemmEx / cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F
//             (no TF32), cuBLAS opened at run time (cublas_library.hpp)
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collscope/device/runtime.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/types.hpp"

namespace collscope::layers {

// A row-major view: rows x cols elements, rows `ld` elements apart.
struct MatView {
  const void* data = nullptr;
  std::size_t rows = 0, cols = 0, ld = 0;
  DataType dtype = DataType::float32;
};
struct MatSpan {
  void* data = nullptr;
  std::size_t rows = 0, cols = 0, ld = 0;
  DataType dtype = DataType::float32;
};

struct GemmCall {
  MatView a;
  Trans ta = Trans::no;
  MatView b;
  Trans tb = Trans::no;
  MatSpan c;
  float beta = 0;  // C = op(A) op(B) + beta C
  // A batch: product i on a, b, c moved by i x stride (elements).
  std::size_t batch = 1;
  std::size_t stride_a = 0, stride_b = 0, stride_c = 0;

  std::size_t m() const { return ta == Trans::no ? a.rows : a.cols; }
  std::size_t k() const { return ta == Trans::no ? a.cols : a.rows; }
  std::size_t n() const { return tb == Trans::no ? b.cols : b.rows; }
  double flop() const { return 2.0 * static_cast<double>(m() * n() * k() * batch); }
};

// Throws std::logic_error when the shapes do not chain (inner dimensions, C's shape).
void check_gemm(const GemmCall& g);

class Gemm {
 public:
  virtual ~Gemm() = default;
  virtual std::string name() const = 0;  // "openblas", "cublas"
  // Enqueued on `stream` (the host: done when it returns).
  virtual void run(const GemmCall& g, device::Stream stream) = 0;
};

std::unique_ptr<Gemm> make_openblas_gemm();
// Throws UsageError (one line, why) when cuBLAS cannot be opened or has no handle.
std::unique_ptr<Gemm> make_cublas_gemm();

}  // namespace collscope::layers
