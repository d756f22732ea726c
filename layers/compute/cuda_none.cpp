// A build without CUDA: no cuBLAS and no CUDA kernels (the device runtime is the emulated
// one at most, whose engine multiplies and loops on the host).
#include "collscope/errors.hpp"
#include "collscope/layers/compute/gemm.hpp"
#include "collscope/layers/compute/kernels.hpp"

namespace collscope::layers {

std::unique_ptr<Gemm> make_cublas_gemm() {
  throw UsageError("this build has no CUDA, so no cuBLAS: GPU GEMMs are unavailable");
}

std::unique_ptr<Kernels> make_cuda_kernels() { return nullptr; }

}  // namespace collscope::layers
