// The CUDA runtime behind device::Runtime (runtime.hpp). Only the runtime API: the
// static cudart loads the driver when first asked, so a binary built with CUDA starts on
// a machine without one and says so then. The kernels are in reducers/device_kernels.cu.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "../reducers/device_kernels.hpp"
#include "collscope/errors.hpp"
#include "runtimes.hpp"

namespace collscope::device {
namespace {

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw RuntimeError(std::string("cuda: ") + what + ": " + cudaGetErrorName(rc) + " (" +
                     cudaGetErrorString(rc) + ")");
}

void check_launch(int rc, const char* what) { check(static_cast<cudaError_t>(rc), what); }

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
  void destroy_stream(Stream s) override { cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
  void synchronize(Stream s) override {
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
  }
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s) override {
    if (bytes == 0) return;
    const cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                                : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(s)), "cudaMemcpyAsync");
  }
  void memset(void* dst, int value, std::size_t bytes, Stream s) override {
    check(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(s)), "cudaMemsetAsync");
  }

  // Blocking-sync events: a host that waits for one sleeps instead of spinning.
  Event create_event(bool interprocess) override {
    cudaEvent_t e = nullptr;
    unsigned flags = cudaEventDisableTiming | cudaEventBlockingSync;
    if (interprocess) flags |= cudaEventInterprocess;
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
  void synchronize_event(Event e) override {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "cudaEventSynchronize");
  }
  bool done(Event e) override {
    const cudaError_t rc = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (rc == cudaErrorNotReady) return false;
    check(rc, "cudaEventQuery");
    return true;
  }

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
  EventHandle export_event(Event e) override {
    cudaIpcEventHandle_t h;
    check(cudaIpcGetEventHandle(&h, static_cast<cudaEvent_t>(e)), "cudaIpcGetEventHandle");
    EventHandle out;
    static_assert(sizeof h == sizeof out.bytes);
    std::memcpy(out.bytes.data(), &h, sizeof h);
    return out;
  }
  Event open_event(const EventHandle& in) override {
    cudaIpcEventHandle_t h;
    std::memcpy(&h, in.bytes.data(), sizeof h);
    cudaEvent_t e = nullptr;
    check(cudaIpcOpenEventHandle(&e, h), "cudaIpcOpenEventHandle");
    return e;
  }

  void begin_capture(Stream s) override {
    check(cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeThreadLocal),
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
  int devices_ = 0;
  int device_ = -1;
  int multiprocessors_ = 1;
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
