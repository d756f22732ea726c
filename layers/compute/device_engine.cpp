// The device engine (engine.hpp) on the device runtime: a cache of device blocks, one
// compute stream, the runtime's timing events; cuBLAS and the CUDA kernels on a GPU,
// OpenBLAS and the host loops on the emulated device (host memory behind the runtime).
//
// The cache: cudaMalloc and cudaFree synchronise the device (and the ipc path keeps a
// peer's buffer mapped until it is freed), so a block an array gives back goes to a
// pending list, moves to the free list of its size at recycle() (the driver calls it
// once every stream has drained, after each pass), and is handed out again for an array
// of the same size. From the second iteration on, a layer allocates nothing.
#include <map>
#include <vector>

#include "collscope/layers/compute/engine.hpp"

namespace collscope::layers {
namespace {

constexpr std::size_t kBlockAlign = 256;

class DeviceEngine final : public Engine {
 public:
  DeviceEngine(device::Runtime& rt, std::unique_ptr<Gemm> gemm, std::unique_ptr<Kernels> kernels)
      : Engine(std::move(gemm), std::move(kernels)), rt_(rt), stream_(rt.create_stream()) {}
  ~DeviceEngine() override {
    release_profile_events();
    release_all();
    rt_.destroy_stream(stream_);
  }

  MemoryKind memory() const override { return MemoryKind::device; }
  std::string runtime_name() const override { return rt_.kind(); }

  void* allocate(std::size_t bytes) override {
    const std::size_t size = rounded(bytes);
    std::vector<void*>& free = free_[size];
    if (!free.empty()) {
      void* p = free.back();
      free.pop_back();
      return p;
    }
    return rt_.alloc(size);
  }
  void release(void* p, std::size_t bytes) override { pending_.emplace_back(p, rounded(bytes)); }
  void recycle() override {
    for (const auto& [p, size] : pending_) free_[size].push_back(p);
    pending_.clear();
  }
  void release_all() override {
    recycle();
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) rt_.free(p);
    free_.clear();
  }

  Stream stream() const override { return stream_; }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0 && dst != src) rt_.copy(dst, src, bytes, device::CopyKind::device_to_device, stream_);
  }
  void memset(void* p, int value, std::size_t bytes) override {
    if (bytes > 0) rt_.memset(p, value, bytes, stream_);
  }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    rt_.copy(dst, src, bytes, device::CopyKind::host_to_device, stream_);
    rt_.synchronize(stream_);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    rt_.copy(dst, src, bytes, device::CopyKind::device_to_host, stream_);
    rt_.synchronize(stream_);
  }
  void synchronize(Stream s) override { rt_.synchronize(s); }

  Event create_event() override { return rt_.create_event(true); }
  void destroy_event(Event e) override { rt_.destroy_event(e); }
  void record(Event e, Stream s) override { rt_.record(e, s); }
  void wait(Stream s, Event e) override { rt_.wait(s, e); }
  double elapsed_ms(Event from, Event to) override { return rt_.elapsed_ms(from, to); }

 private:
  static std::size_t rounded(std::size_t bytes) {
    return (bytes + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  }

  device::Runtime& rt_;
  Stream stream_;
  std::map<std::size_t, std::vector<void*>> free_;       // by size
  std::vector<std::pair<void*, std::size_t>> pending_;  // given back since the last recycle
};

}  // namespace

std::unique_ptr<Engine> make_device_engine(device::Runtime& rt) {
  if (rt.emulated())
    return std::make_unique<DeviceEngine>(rt, make_openblas_gemm(), make_host_kernels());
  return std::make_unique<DeviceEngine>(rt, make_cublas_gemm(), make_cuda_kernels());
}

}  // namespace collscope::layers
