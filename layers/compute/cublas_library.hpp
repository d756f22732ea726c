// cuBLAS, opened at run time (dlopen of libcublas.so.13 or .12, or the file named by
// COLLSCOPE_CUBLAS_LIBRARY), as collscope opens NCCL: a layer binary starts where cuBLAS
// is missing, and -m device on a GPU then says why in one line (exit 2). Only the
// functions the layers' GEMMs need are bound.
#pragma once

#include <cublas_api.h>

#include <string>

namespace collscope::layers::cublas {

struct Library {
  std::string path;
  int version = 0;  // cublasGetProperty: major x 10000 + minor x 100 + patch
  cublasStatus_t (*Create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*Destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*SetStream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*SetMathMode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*GemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                           cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*GemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const void*, const void*, cudaDataType, int,
                                         long long, const void*, cudaDataType, int, long long,
                                         const void*, void*, cudaDataType, int, long long, int,
                                         cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  const char* (*GetStatusString)(cublasStatus_t) = nullptr;

  std::string version_text() const;  // "13.0.2"
  // Throws RuntimeError naming `what` and cuBLAS's message when rc is not success.
  void check(cublasStatus_t rc, const char* what) const;
};

// Opens the library at `path` (a file or a soname for dlopen) and binds its functions
// into `lib`; why it cannot, or "" (no handle is made: this works without a GPU).
std::string open_library(const std::string& path, Library& lib);

// Why cuBLAS cannot be opened, or "" when it can (then library() returns it): the
// first of libcublas.so.13, .12, libcublas.so and /usr/local/cuda/lib64's that opens,
// or the file COLLSCOPE_CUBLAS_LIBRARY names.
std::string unavailable_reason();
// Throws UsageError with the reason when it cannot be opened.
const Library& library();

}  // namespace collscope::layers::cublas
