// The device reducer's kernels: reduce, divide and copy, for every element type and
// operator, with elementwise.hpp's element functions (the host reducer's own), so a
// device result is bit-identical to the host's.
//
// Memory-bound kernels: each thread moves 16-byte words (uint4) when the three pointers
// are 16-byte aligned, so every warp reads and writes whole 512-byte lines; otherwise
// it moves single elements (unaligned offsets are legal, only slower). A grid-stride
// loop over a grid of a few blocks per multiprocessor covers any length.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "collscope/elementwise.hpp"
#include "device_kernels.hpp"

namespace collscope::device::kernels {
namespace {

using namespace elementwise;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

unsigned grid_for(std::size_t work, int multiprocessors) {
  const std::size_t want = (work + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(multiprocessors > 0 ? multiprocessors : 1) *
                          kBlocksPerSm;
  const std::size_t g = want < cap ? want : cap;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// Elements [0, words * K) as 16-byte words of K elements each.
template <class T, class Op>
__global__ void reduce_words(T* out, const T* a, const T* b, std::size_t words) {
  constexpr int K = 16 / sizeof(T);
  for (std::size_t w = first_index(); w < words; w += stride()) {
    const uint4 x = reinterpret_cast<const uint4*>(a)[w];
    const uint4 y = reinterpret_cast<const uint4*>(b)[w];
    T xs[K], ys[K], zs[K];
    memcpy(xs, &x, 16);
    memcpy(ys, &y, 16);
#pragma unroll
    for (int k = 0; k < K; ++k) zs[k] = reduce_one<T, Op>(xs[k], ys[k]);
    uint4 z;
    memcpy(&z, zs, 16);
    reinterpret_cast<uint4*>(out)[w] = z;
  }
}

template <class T, class Op>
__global__ void reduce_elements(T* out, const T* a, const T* b, std::size_t count) {
  for (std::size_t i = first_index(); i < count; i += stride())
    out[i] = reduce_one<T, Op>(a[i], b[i]);
}

template <class T>
__global__ void divide_elements(T* buf, std::size_t count, int divisor) {
  for (std::size_t i = first_index(); i < count; i += stride()) buf[i] = divide_one(buf[i], divisor);
}

__global__ void copy_words(uint4* dst, const uint4* src, std::size_t words) {
  for (std::size_t w = first_index(); w < words; w += stride()) dst[w] = src[w];
}

// The flags' fallback where the GPU lacks 64-bit stream memory operations: one thread
// makes everything the stream did before visible to every process, then sets the flag;
// or polls it until it holds the value.
__global__ void write_flag_kernel(unsigned long long* flag, unsigned long long value) {
  __threadfence_system();
  *reinterpret_cast<volatile unsigned long long*>(flag) = value;
  __threadfence_system();
}

__global__ void wait_flag_kernel(const unsigned long long* flag, unsigned long long value) {
  while (*reinterpret_cast<const volatile unsigned long long*>(flag) != value) __nanosleep(256);
  __threadfence_system();
}

__global__ void copy_bytes(unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  for (std::size_t i = first_index(); i < bytes; i += stride()) dst[i] = src[i];
}

template <class T, class Op>
void launch_reduce(T* out, const T* a, const T* b, std::size_t count, cudaStream_t s, int sms) {
  constexpr std::size_t K = 16 / sizeof(T);
  std::size_t done = 0;
  if (aligned16(out) && aligned16(a) && aligned16(b)) {
    const std::size_t words = count / K;
    if (words > 0) reduce_words<T, Op><<<grid_for(words, sms), kThreads, 0, s>>>(out, a, b, words);
    done = words * K;
  }
  if (done < count)
    reduce_elements<T, Op><<<grid_for(count - done, sms), kThreads, 0, s>>>(
        out + done, a + done, b + done, count - done);
}

}  // namespace

int reduce(void* out, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op,
           void* stream, int multiprocessors) {
  if (count == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    with_op(op, [&](auto o) {
      launch_reduce<T, decltype(o)>(static_cast<T*>(out), static_cast<const T*>(a),
                                    static_cast<const T*>(b), count, s, multiprocessors);
    });
  });
  return static_cast<int>(cudaGetLastError());
}

int divide(void* buf, std::size_t count, DataType t, int divisor, void* stream,
           int multiprocessors) {
  if (count == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    divide_elements<T><<<grid_for(count, multiprocessors), kThreads, 0, s>>>(static_cast<T*>(buf),
                                                                           count, divisor);
  });
  return static_cast<int>(cudaGetLastError());
}

int copy(void* dst, const void* src, std::size_t bytes, void* stream, int multiprocessors) {
  if (bytes == 0 || dst == src) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  std::size_t done = 0;
  if (aligned16(dst) && aligned16(src)) {
    const std::size_t words = bytes / 16;
    if (words > 0)
      copy_words<<<grid_for(words, multiprocessors), kThreads, 0, s>>>(
          static_cast<uint4*>(dst), static_cast<const uint4*>(src), words);
    done = words * 16;
  }
  if (done < bytes)
    copy_bytes<<<grid_for(bytes - done, multiprocessors), kThreads, 0, s>>>(
        static_cast<unsigned char*>(dst) + done, static_cast<const unsigned char*>(src) + done,
        bytes - done);
  return static_cast<int>(cudaGetLastError());
}

int write_flag(std::uint64_t* flag, std::uint64_t value, void* stream) {
  write_flag_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<unsigned long long*>(flag), value);
  return static_cast<int>(cudaGetLastError());
}

int wait_flag(const std::uint64_t* flag, std::uint64_t value, void* stream) {
  wait_flag_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const unsigned long long*>(flag), value);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace collscope::device::kernels
