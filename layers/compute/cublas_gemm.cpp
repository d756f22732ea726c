// The GPU GEMM (gemm.hpp) through cuBLAS: row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T, so B goes first and the dimensions swap; float32 compute
// (CUBLAS_COMPUTE_32F: no TF32), A and B float32 or bfloat16 alike, C float32 or
// bfloat16. A batch at fixed strides is one cublasGemmStridedBatchedEx.
#include <climits>
#include <stdexcept>

#include "collscope/errors.hpp"
#include "collscope/layers/compute/gemm.hpp"
#include "cublas_library.hpp"

namespace collscope::layers {
namespace {

cudaDataType cuda_type(DataType t) {
  if (t == DataType::float32) return CUDA_R_32F;
  if (t == DataType::bfloat16) return CUDA_R_16BF;
  throw std::logic_error("gemm: cuBLAS operands must be float32 or bfloat16");
}

int as_int(std::size_t v, const char* what) {
  if (v > static_cast<std::size_t>(INT_MAX))
    throw std::logic_error(std::string("gemm: ") + what + " exceeds cuBLAS's int");
  return static_cast<int>(v);
}

// cuBLAS wants every leading dimension at least 1, also for an empty view.
int leading(std::size_t ld, const char* what) { return as_int(ld > 0 ? ld : 1, what); }

cublasOperation_t op_of(Trans t) { return t == Trans::no ? CUBLAS_OP_N : CUBLAS_OP_T; }

class CublasGemm final : public Gemm {
 public:
  CublasGemm() : lib_(cublas::library()) {
    lib_.check(lib_.Create(&handle_), "cublasCreate");
    lib_.check(lib_.SetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  ~CublasGemm() override { lib_.Destroy(handle_); }
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  std::string name() const override { return "cublas " + lib_.version_text(); }

  void run(const GemmCall& g, device::Stream stream) override {
    check_gemm(g);
    if (g.a.dtype != g.b.dtype) throw std::logic_error("gemm: A and B must have one dtype");
    if (g.m() == 0 || g.n() == 0 || g.batch == 0) return;
    lib_.check(lib_.SetStream(handle_, static_cast<cudaStream_t>(stream)), "cublasSetStream");
    const float alpha = 1.0f, beta = g.beta;
    const int m = as_int(g.n(), "n"), n = as_int(g.m(), "m"), k = as_int(g.k(), "k");
    const cudaDataType ab = cuda_type(g.a.dtype), c = cuda_type(g.c.dtype);
    const int lda = leading(g.b.ld, "ldb"), ldb = leading(g.a.ld, "lda"), ldc = leading(g.c.ld, "ldc");
    if (g.batch == 1) {
      lib_.check(lib_.GemmEx(handle_, op_of(g.tb), op_of(g.ta), m, n, k, &alpha, g.b.data, ab, lda,
                             g.a.data, ab, ldb, &beta, g.c.data, c, ldc, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
      return;
    }
    lib_.check(lib_.GemmStridedBatchedEx(
                   handle_, op_of(g.tb), op_of(g.ta), m, n, k, &alpha, g.b.data, ab, lda,
                   static_cast<long long>(g.stride_b), g.a.data, ab, ldb,
                   static_cast<long long>(g.stride_a), &beta, g.c.data, c, ldc,
                   static_cast<long long>(g.stride_c), as_int(g.batch, "batch"),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
  }

 private:
  const cublas::Library& lib_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

std::unique_ptr<Gemm> make_cublas_gemm() { return std::make_unique<CublasGemm>(); }

}  // namespace collscope::layers
