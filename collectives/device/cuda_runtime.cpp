// The CUDA runtime behind device::Runtime (runtime.hpp). Only the runtime API: the
// static cudart loads the driver when first asked, so a binary built with CUDA starts on
// a machine without one and says so then. The kernels are in reducers/device_kernels.cu.
//
// Flags use the driver's 64-bit stream memory operations (cuStreamWriteValue64,
// cuStreamWaitValue64: the GPU's front end sets and polls the word, no SM is held and the
// host is not involved), reached through cudaGetDriverEntryPointByVersion so that libcuda
// is never linked. Where the device lacks them, or COLLSCOPE_FLAGS=kernel, one-thread
// kernels do the same.
#include <cuda.h>  // the driver's types and enums only: its functions come as entry points
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "../reducers/device_kernels.hpp"
#include "collscope/errors.hpp"
#include "collscope/wait_policy.hpp"
#include "runtimes.hpp"
#include "slowdown.hpp"

namespace collscope::device {
namespace {

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw RuntimeError(std::string("cuda: ") + what + ": " + cudaGetErrorName(rc) + " (" +
                     cudaGetErrorString(rc) + ")");
}

void check_launch(int rc, const char* what) { check(static_cast<cudaError_t>(rc), what); }

// The stream memory operations, from the driver at run time.
struct MemOps {
  using WriteValue = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
  using WaitValue = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  WriteValue write = nullptr;
  WaitValue wait = nullptr;
};

template <class F>
F driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<F>(fn);
}

// The memory operations where `device` has 64-bit ones and COLLSCOPE_FLAGS does not ask
// for kernels; none (write == nullptr) otherwise.
MemOps find_mem_ops(int device) {
  const char* asked = std::getenv("COLLSCOPE_FLAGS");
  if (asked && std::string_view(asked) == "kernel") return {};
  auto attribute = driver_function<MemOps::GetAttribute>("cuDeviceGetAttribute");
  int has64 = 0;
  if (!attribute ||
      attribute(&has64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device) != CUDA_SUCCESS ||
      !has64)
    return {};
  MemOps ops{driver_function<MemOps::WriteValue>("cuStreamWriteValue64"),
             driver_function<MemOps::WaitValue>("cuStreamWaitValue64")};
  if (!ops.write || !ops.wait) return {};
  return ops;
}

void check_driver(CUresult rc, const char* what) {
  if (rc != CUDA_SUCCESS)
    throw RuntimeError(std::string("cuda: ") + what + " failed (CUresult " + std::to_string(rc) + ")");
}

std::string uuid_text(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[64];
  std::snprintf(s, sizeof s,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return s;
}

class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(int devices) : devices_(devices) {}
  bool emulated() const override { return false; }
  std::string kind() const override { return "cuda"; }
  int device_count() override { return devices_; }

  void select(int device) override {
    if (device < 0 || device >= devices_)
      throw UsageError("GPU " + std::to_string(device) + " does not exist (this node has " +
                       std::to_string(devices_) + ")");
    check(cudaSetDevice(device), "cudaSetDevice");
    device_ = device;
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    multiprocessors_ = prop.multiProcessorCount;
    mem_ops_ = find_mem_ops(device);
    check(cudaStreamCreateWithFlags(&look_, cudaStreamNonBlocking), "cudaStreamCreate");
  }

  Info info() override {
    Info i;
    check(cudaGetDevice(&i.index), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, i.index), "cudaGetDeviceProperties");
    i.name = prop.name;
    i.uuid = uuid_text(prop.uuid);
    char bus[32] = {};
    check(cudaDeviceGetPCIBusId(bus, sizeof bus, i.index), "cudaDeviceGetPCIBusId");
    i.pci_bus_id = bus;
    i.memory_bytes = prop.totalGlobalMem;
    i.multiprocessors = prop.multiProcessorCount;
    check(cudaDriverGetVersion(&i.driver_version), "cudaDriverGetVersion");
    check(cudaRuntimeGetVersion(&i.runtime_version), "cudaRuntimeGetVersion");
    int mps = 0;
    check(cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, i.index), "cudaDeviceGetAttribute(MpsEnabled)");
    i.mps_client = mps != 0;
    return i;
  }

  void* alloc_pinned(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable), "cudaHostAlloc");
    return p;
  }
  void free_pinned(void* p) override {
    if (p) check(cudaFreeHost(p), "cudaFreeHost");
  }

  Stream create_stream() override {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
  }
  void destroy_stream(Stream s) override {
    if (auto it = sync_events_.find(s); it != sync_events_.end()) {
      cudaEventDestroy(it->second);
      sync_events_.erase(it);
    }
    cudaStreamDestroy(static_cast<cudaStream_t>(s));
  }
  void synchronize(Stream s) override {
    auto stream = static_cast<cudaStream_t>(s);
    if (wait_policy() == WaitPolicy::block) {
      cudaEvent_t& e = sync_events_[s];
      if (!e) e = static_cast<cudaEvent_t>(create_event(false));
      record(e, s);
      check(cudaEventSynchronize(e), "cudaEventSynchronize");
      return;
    }
    poll_until([&] { return query(cudaStreamQuery(stream), "cudaStreamQuery"); });
  }
  bool idle(Stream s) override {
    return query(cudaStreamQuery(static_cast<cudaStream_t>(s)), "cudaStreamQuery");
  }
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s) override {
    if (bytes == 0) return;
    const cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                                : cudaMemcpyDeviceToDevice;
    const long repeats = std::lround(slowdown_factor(*this, kind, dst, src));  // a test hook (slowdown.hpp)
    for (long i = 0; i < repeats; ++i)
      check(cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(s)), "cudaMemcpyAsync");
  }
  void memset(void* dst, int value, std::size_t bytes, Stream s) override {
    check(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(s)), "cudaMemsetAsync");
  }

  // Blocking-sync events: host_wait sleeps on them under the block policy and polls them
  // otherwise (the flag only matters to cudaEventSynchronize).
  Event create_event(bool timing) override {
    cudaEvent_t e = nullptr;
    unsigned flags = cudaEventBlockingSync;
    if (!timing) flags |= cudaEventDisableTiming;
    check(cudaEventCreateWithFlags(&e, flags), "cudaEventCreate");
    return e;
  }
  void destroy_event(Event e) override { cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
  void record(Event e, Stream s) override {
    check(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)),
          "cudaEventRecord");
  }
  void wait(Stream s, Event e) override {
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(s), static_cast<cudaEvent_t>(e), 0),
          "cudaStreamWaitEvent");
  }
  void host_wait(Event e) override {
    if (wait_policy() == WaitPolicy::block) {
      check(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "cudaEventSynchronize");
      return;
    }
    poll_until([&] { return done(e); });
  }
  bool done(Event e) override {
    return query(cudaEventQuery(static_cast<cudaEvent_t>(e)), "cudaEventQuery");
  }
  double elapsed_ms(Event from, Event to) override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to)),
          "cudaEventElapsedTime");
    return ms;
  }

  void write_flag(Stream s, std::uint64_t* flag, std::uint64_t value) override {
    if (mem_ops_.write) {
      check_driver(mem_ops_.write(static_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(flag),
                                  value, CU_STREAM_WRITE_VALUE_DEFAULT),
                   "cuStreamWriteValue64");
      return;
    }
    check_launch(kernels::write_flag(flag, value, s), "flag kernel");
  }
  void wait_flag(Stream s, const std::uint64_t* flag, std::uint64_t value) override {
    if (mem_ops_.wait) {
      check_driver(mem_ops_.wait(static_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(flag),
                                 value, CU_STREAM_WAIT_VALUE_EQ),
                   "cuStreamWaitValue64");
      return;
    }
    check_launch(kernels::wait_flag(flag, value, s), "flag wait kernel");
  }
  // On a stream of its own: the others may be waiting for this very flag.
  std::uint64_t read_flag(const std::uint64_t* flag) override {
    std::uint64_t v = 0;
    check(cudaMemcpyAsync(&v, flag, sizeof v, cudaMemcpyDeviceToHost, look_), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(look_), "cudaStreamSynchronize");
    return v;
  }
  std::string flag_mechanism() const override { return mem_ops_.write ? "memop" : "kernel"; }

  MemHandle export_memory(void* base) override {
    cudaIpcMemHandle_t h;
    check(cudaIpcGetMemHandle(&h, base), "cudaIpcGetMemHandle");
    MemHandle out;
    static_assert(sizeof h == sizeof out.bytes);
    std::memcpy(out.bytes.data(), &h, sizeof h);
    return out;
  }
  void* open_memory(const MemHandle& in) override {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, in.bytes.data(), sizeof h);
    void* p = nullptr;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
  }
  void close_memory(void* p) override { cudaIpcCloseMemHandle(p); }
  // Relaxed: a call captured for the first time may open a peer's memory (cudaIpcOpen-
  // MemHandle), which the stricter modes refuse during a capture.
  void begin_capture(Stream s) override {
    check(cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeRelaxed),
          "cudaStreamBeginCapture");
  }
  Graph end_capture(Stream s) override {
    cudaGraph_t g = nullptr;
    check(cudaStreamEndCapture(static_cast<cudaStream_t>(s), &g), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t rc = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    check(rc, "cudaGraphInstantiate");
    return exec;
  }
  void launch(Graph g, Stream s) override {
    check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g), static_cast<cudaStream_t>(s)),
          "cudaGraphLaunch");
  }
  void destroy_graph(Graph g) override {
    if (g) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
  }

  void reduce(void* out, const void* a, const void* b, std::size_t count, DataType t,
              ReduceOp op, Stream s) override {
    check_launch(kernels::reduce(out, a, b, count, t, op, s, multiprocessors_), "reduce kernel");
  }
  void divide(void* buf, std::size_t count, DataType t, int divisor, Stream s) override {
    check_launch(kernels::divide(buf, count, t, divisor, s, multiprocessors_), "divide kernel");
  }
  void copy_kernel(void* dst, const void* src, std::size_t bytes, Stream s) override {
    const long repeats = std::lround(slowdown_factor(*this, CopyKind::device_to_device, dst, src));
    for (long i = 0; i < repeats; ++i)
      check_launch(kernels::copy(dst, src, bytes, s, multiprocessors_), "copy kernel");
  }

 protected:
  void* do_alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), ("cudaMalloc of " + std::to_string(bytes) + " B").c_str());
    return p;
  }
  void do_free(void* p) override { cudaFree(p); }

 private:
  // cudaSuccess: true; cudaErrorNotReady: false; anything else throws.
  static bool query(cudaError_t rc, const char* what) {
    if (rc == cudaErrorNotReady) return false;
    check(rc, what);
    return true;
  }

  int devices_ = 0;
  int device_ = -1;
  int multiprocessors_ = 1;
  MemOps mem_ops_;
  cudaStream_t look_ = nullptr;  // read_flag's
  std::unordered_map<Stream, cudaEvent_t> sync_events_;  // synchronize's, under block
};

}  // namespace

std::unique_ptr<Runtime> make_cuda_runtime(std::string& why) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    why = std::string("no usable CUDA device (") + cudaGetErrorString(rc) + ")";
    return nullptr;
  }
  if (n == 0) {
    why = "no CUDA device is visible (CUDA_VISIBLE_DEVICES?)";
    return nullptr;
  }
  return std::make_unique<CudaRuntime>(n);
}

}  // namespace collscope::device
