// The kernels (kernels.hpp) on a GPU: every body of kernel_bodies.hpp in a grid-stride
// kernel (one thread per element, row, token, slot or column), except the row
// reductions, which run one warp per row: softmax and its backward, LayerNorm and its
// backward, the cross-entropy's row max and sum of exponentials. A warp's lanes take
// columns lane, lane + 32, ... and combine their partial maxima and sums by shuffles,
// with the same element formulas (hd_rows.hpp) as the host's sequential rows: results
// agree with the host's within rounding, not bit for bit.
#include <cuda_runtime.h>

#include "collscope/errors.hpp"
#include "kernel_set.hpp"

namespace collscope::layers {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kBlocksPerSm = 8;

int multiprocessors() {
  static const int sms = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 1;
  }();
  return sms;
}

unsigned grid_for(std::size_t threads) {
  const std::size_t want = (threads + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(multiprocessors()) * kBlocksPerSm;
  return static_cast<unsigned>(want < 1 ? 1 : (want < cap ? want : cap));
}

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw RuntimeError(std::string("layer kernel ") + what + ": " + cudaGetErrorString(e));
}

cudaStream_t stream_of(device::Stream s) { return static_cast<cudaStream_t>(s); }

__device__ std::size_t thread_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t thread_count() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

template <class Body>
__global__ void each_kernel(std::size_t n, Body body) {
  for (std::size_t i = thread_index(); i < n; i += thread_count()) body(i);
}

// ---- warp reductions -------------------------------------------------------------------

__device__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = hd::max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Row r of this warp, the next r a grid's worth of warps on; lane: its column offset.
struct WarpRows {
  std::size_t first, step;
  unsigned lane;
};

__device__ WarpRows warp_rows() {
  return {thread_index() / kWarp, thread_count() / kWarp, threadIdx.x % kWarp};
}

template <class O>
__global__ void softmax_kernel(bodies::Softmax<O> b, std::size_t rows) {
  const WarpRows w = warp_rows();
  for (std::size_t r = w.first; r < rows; r += w.step) {
    const float* s = b.s + r * b.n;
    O* p = b.p + r * b.n;
    const std::size_t keys = b.causal ? r % b.period + 1 : b.n;
    float mx = hd::minus_infinity<float>();
    for (std::size_t j = w.lane; j < keys; j += kWarp) mx = hd::max(mx, s[j] * b.scale);
    mx = warp_max(mx);
    float sum = 0;
    for (std::size_t j = w.lane; j < keys; j += kWarp) sum += hd::softmax_exp(s[j], b.scale, mx);
    sum = warp_sum(sum);
    for (std::size_t j = w.lane; j < b.n; j += kWarp)
      p[j] = hd::store<O>(j < keys ? hd::softmax_exp(s[j], b.scale, mx) / sum : 0.0f);
  }
}

template <class O, class P>
__global__ void softmax_backward_kernel(bodies::SoftmaxBackward<O, P> b, std::size_t rows) {
  const WarpRows w = warp_rows();
  for (std::size_t r = w.first; r < rows; r += w.step) {
    const float* dp = b.dp + r * b.n;
    const P* p = b.p + r * b.n;
    O* ds = b.ds + r * b.n;
    float dot = 0;
    for (std::size_t j = w.lane; j < b.n; j += kWarp) dot += dp[j] * hd::load(p[j]);
    dot = warp_sum(dot);
    for (std::size_t j = w.lane; j < b.n; j += kWarp)
      ds[j] = hd::store<O>(hd::softmax_backward_value(hd::load(p[j]), dp[j], dot, b.scale));
  }
}

template <class Y, class X, class G>
__global__ void layernorm_kernel(bodies::LayerNorm<Y, X, G> b, std::size_t rows) {
  const WarpRows w = warp_rows();
  for (std::size_t r = w.first; r < rows; r += w.step) {
    const X* x = b.x + r * b.h;
    float sum = 0;
    for (std::size_t c = w.lane; c < b.h; c += kWarp) sum += hd::load(x[c]);
    const float mean = warp_sum(sum) / static_cast<float>(b.h);
    float sq = 0;
    for (std::size_t c = w.lane; c < b.h; c += kWarp) {
      const float d = hd::load(x[c]) - mean;
      sq += d * d;
    }
    const float rstd = hd::layernorm_rstd(warp_sum(sq), b.h);
    if (w.lane == 0) b.mean[r] = mean, b.rstd[r] = rstd;
    for (std::size_t c = w.lane; c < b.h; c += kWarp)
      b.y[r * b.h + c] = hd::store<Y>(hd::layernorm_value(hd::load(x[c]), mean, rstd,
                                                          hd::load(b.gamma[c]), hd::load(b.beta[c])));
  }
}

template <class O, class X, class G, class D>
__global__ void layernorm_backward_kernel(bodies::LayerNormBackward<O, X, G, D> b,
                                          std::size_t rows) {
  const WarpRows w = warp_rows();
  for (std::size_t r = w.first; r < rows; r += w.step) {
    const X* x = b.x + r * b.h;
    const D* dy = b.dy + r * b.h;
    const float mean = b.mean[r], rstd = b.rstd[r];
    float g_sum = 0, gx_sum = 0;
    for (std::size_t c = w.lane; c < b.h; c += kWarp) {
      const float g = hd::load(dy[c]) * hd::load(b.gamma[c]);
      g_sum += g;
      gx_sum += g * hd::layernorm_xhat(hd::load(x[c]), mean, rstd);
    }
    const float mean_g = warp_sum(g_sum) / static_cast<float>(b.h);
    const float mean_gx = warp_sum(gx_sum) / static_cast<float>(b.h);
    for (std::size_t c = w.lane; c < b.h; c += kWarp)
      b.dx[r * b.h + c] = hd::store<O>(hd::layernorm_dx(hd::load(x[c]), hd::load(dy[c]),
                                                        hd::load(b.gamma[c]), mean, rstd, mean_g,
                                                        mean_gx));
  }
}

template <class L>
__global__ void row_max_kernel(bodies::RowMax<L> b, std::size_t rows) {
  const WarpRows w = warp_rows();
  for (std::size_t r = w.first; r < rows; r += w.step) {
    float mx = hd::minus_infinity<float>();
    for (std::size_t j = w.lane; j < b.n; j += kWarp) mx = hd::max(mx, hd::load(b.l[r * b.n + j]));
    mx = warp_max(mx);
    if (w.lane == 0) b.out[r] = mx;
  }
}

template <class L>
__global__ void sum_exp_kernel(bodies::RowSumExp<L> b, std::size_t rows) {
  const WarpRows w = warp_rows();
  for (std::size_t r = w.first; r < rows; r += w.step) {
    float s = 0;
    for (std::size_t j = w.lane; j < b.n; j += kWarp) s += hd::exp(hd::load(b.l[r * b.n + j]) - b.max[r]);
    s = warp_sum(s);
    if (w.lane == 0) b.out[r] = s;
  }
}

struct CudaLaunch {
  static std::string name() { return "cuda"; }

  template <class Body>
  static void each(std::size_t n, const Body& body, device::Stream s) {
    if (n == 0) return;
    each_kernel<<<grid_for(n), kThreads, 0, stream_of(s)>>>(n, body);
    check_launch("each");
  }

  // A warp per row for the reductions; any other row body one thread per row.
  template <class Body>
  static void rows(std::size_t rows, const Body& body, device::Stream s) {
    each(rows, body, s);
  }
  template <class O>
  static void rows(std::size_t rows, const bodies::Softmax<O>& b, device::Stream s) {
    warps(softmax_kernel<O>, b, rows, s);
  }
  template <class O, class P>
  static void rows(std::size_t rows, const bodies::SoftmaxBackward<O, P>& b, device::Stream s) {
    warps(softmax_backward_kernel<O, P>, b, rows, s);
  }
  template <class Y, class X, class G>
  static void rows(std::size_t rows, const bodies::LayerNorm<Y, X, G>& b, device::Stream s) {
    warps(layernorm_kernel<Y, X, G>, b, rows, s);
  }
  template <class O, class X, class G, class D>
  static void rows(std::size_t rows, const bodies::LayerNormBackward<O, X, G, D>& b,
                   device::Stream s) {
    warps(layernorm_backward_kernel<O, X, G, D>, b, rows, s);
  }
  template <class L>
  static void rows(std::size_t rows, const bodies::RowMax<L>& b, device::Stream s) {
    warps(row_max_kernel<L>, b, rows, s);
  }
  template <class L>
  static void rows(std::size_t rows, const bodies::RowSumExp<L>& b, device::Stream s) {
    warps(sum_exp_kernel<L>, b, rows, s);
  }

 private:
  template <class Kernel, class Body>
  static void warps(Kernel kernel, const Body& b, std::size_t rows, device::Stream s) {
    if (rows == 0) return;
    kernel<<<grid_for(rows * kWarp), kThreads, 0, stream_of(s)>>>(b, rows);
    check_launch("rows");
  }
};

}  // namespace

std::unique_ptr<Kernels> make_cuda_kernels() { return std::make_unique<KernelSet<CudaLaunch>>(); }

}  // namespace collscope::layers
