// The host engine (engine.hpp): host memory, OpenBLAS, the kernels as loops. Nothing is
// asynchronous: an op is done when it returns, a stream is null, and an event is the
// steady-clock time it was recorded (so the timeline's arithmetic is the device's).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "collscope/errors.hpp"
#include "collscope/layers/compute/engine.hpp"

namespace collscope::layers {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class HostEngine final : public Engine {
 public:
  HostEngine() : Engine(make_openblas_gemm(), make_host_kernels()) {}
  ~HostEngine() override { release_profile_events(); }

  MemoryKind memory() const override { return MemoryKind::host; }
  std::string runtime_name() const override { return "host"; }

  void* allocate(std::size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw RuntimeError("out of host memory (" + std::to_string(bytes) + " B)");
    return p;
  }
  void release(void* p, std::size_t) override { std::free(p); }

  Stream stream() const override { return nullptr; }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  }
  void memset(void* p, int value, std::size_t bytes) override {
    if (bytes > 0) std::memset(p, value, bytes);
  }
  void upload(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void synchronize(Stream) override {}

  Event create_event() override { return new double(0); }
  void destroy_event(Event e) override { delete static_cast<double*>(e); }
  void record(Event e, Stream) override { *static_cast<double*>(e) = now_ms(); }
  void wait(Stream, Event) override {}
  double elapsed_ms(Event from, Event to) override {
    return *static_cast<double*>(to) - *static_cast<double*>(from);
  }
};

}  // namespace

std::unique_ptr<Engine> make_host_engine() { return std::make_unique<HostEngine>(); }

}  // namespace collscope::layers
