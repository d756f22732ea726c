// The test data on the GPU: values.hpp's element functions in kernels, so a device
// buffer holds bit for bit what the host would write, and a check reports the same
// wrong-element count and first wrong element as the host's compare().
#include <cuda_runtime.h>

#include <string>

#include "collscope/elementwise.hpp"
#include "collscope/errors.hpp"
#include "device_data.hpp"

namespace collscope::verify::gpu {
namespace {

constexpr int kThreads = 256;

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw RuntimeError(std::string("cuda: ") + what + ": " + cudaGetErrorString(rc));
}

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

__global__ void fill_input_kernel(void* buf, std::size_t count, DataSpec s, int rank,
                                  std::size_t first) {
  for (std::size_t i = first_index(); i < count; i += stride())
    values::store(buf, i, values::input_value(s, rank, first + i), s.dtype);
}

// avg: the host stores the sum, then divides the stored element; so does this.
template <class T>
__device__ void divide_stored(void* buf, std::size_t i, int n) {
  T* p = static_cast<T*>(buf);
  p[i] = elementwise::divide_one(p[i], n);
}

__global__ void fill_reduced_kernel(void* buf, std::size_t count, DataSpec s, std::size_t first) {
  for (std::size_t i = first_index(); i < count; i += stride()) {
    values::store(buf, i, values::reduced_value(s, first + i), s.dtype);
    if (s.op != ReduceOp::avg) continue;
    switch (s.dtype) {
      case DataType::float16: divide_stored<float16_t>(buf, i, s.nranks); break;
      case DataType::bfloat16: divide_stored<bfloat16_t>(buf, i, s.nranks); break;
      case DataType::float32: divide_stored<float>(buf, i, s.nranks); break;
      case DataType::float64: divide_stored<double>(buf, i, s.nranks); break;
      default: break;  // avg is refused for integers before any call
    }
  }
}

struct Counts {
  unsigned long long wrong;
  unsigned long long first;  // ULLONG_MAX: none
};

__global__ void compare_kernel(const void* got, const void* want, std::size_t count, DataType t,
                               Counts* out) {
  for (std::size_t i = first_index(); i < count; i += stride()) {
    if (values::same_value(got, want, i, t)) continue;
    atomicAdd(&out->wrong, 1ULL);
    atomicMin(&out->first, static_cast<unsigned long long>(i));
  }
}

void finish(const char* what) {
  check(cudaGetLastError(), what);
  check(cudaStreamSynchronize(nullptr), what);
}

}  // namespace

void fill_input(void* buf, std::size_t count, const DataSpec& s, int rank, std::size_t first) {
  if (count == 0) return;
  fill_input_kernel<<<blocks_for(count), kThreads>>>(buf, count, s, rank, first);
  finish("fill input");
}

void fill_allreduce_expected(void* buf, std::size_t count, const DataSpec& s, std::size_t first) {
  if (count == 0) return;
  fill_reduced_kernel<<<blocks_for(count), kThreads>>>(buf, count, s, first);
  finish("fill expected");
}

Mismatch compare(const void* got, const void* want, std::size_t count, DataType t) {
  Mismatch m;
  if (count == 0) return m;
  Counts* d = nullptr;
  check(cudaMalloc(&d, sizeof(Counts)), "cudaMalloc");
  const Counts init{0, ~0ULL};
  Counts host{};
  try {
    check(cudaMemcpy(d, &init, sizeof init, cudaMemcpyHostToDevice), "cudaMemcpy");
    compare_kernel<<<blocks_for(count), kThreads>>>(got, want, count, t, d);
    finish("compare");
    check(cudaMemcpy(&host, d, sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (host.wrong > 0) {  // the first wrong element's two values, read back
      const std::size_t size = dtype_size(t), at = host.first * size;
      unsigned char g[8] = {}, w[8] = {};
      check(cudaMemcpy(g, static_cast<const unsigned char*>(got) + at, size, cudaMemcpyDeviceToHost),
            "cudaMemcpy");
      check(cudaMemcpy(w, static_cast<const unsigned char*>(want) + at, size, cudaMemcpyDeviceToHost),
            "cudaMemcpy");
      m.wrong = host.wrong;
      m.first_index = static_cast<std::int64_t>(host.first);
      m.got = values::load(g, 0, t);
      m.want = values::load(w, 0, t);
    }
  } catch (...) {
    cudaFree(d);
    throw;
  }
  cudaFree(d);
  return m;
}

}  // namespace collscope::verify::gpu
