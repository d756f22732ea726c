// The host emulation of a device (runtime.hpp): for tests of the device paths on
// machines without a GPU. Device memory is a memfd mapping, so a peer process on the
// same machine can map it by the handle (pid, fd), as CUDA IPC maps a peer's allocation.
// Work runs when it is enqueued, so streams have nothing to order and are tokens; an event
// is the time it was recorded at; the host reducer does the kernels' work. A stream that
// waits for a flag is the host waiting for it (yielding the core: it stands for the GPU,
// which waits without the host), so the IPC path's protocol runs as on a GPU.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sched.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "collscope/errors.hpp"
#include "collscope/reducer.hpp"
#include "runtimes.hpp"
#include "slowdown.hpp"

namespace collscope::device {
namespace {

struct Shared {
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t bytes;
};
static_assert(sizeof(Shared) <= sizeof(MemHandle::bytes));

// What a real context finds out from its driver, the emulation reads from the folder MPS
// clients look in: CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps) with the daemon's
// `control` pipe in it. A stand-in daemon that makes the pipe makes the ranks MPS clients.
bool mps_daemon_reachable() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control = std::string(dir && *dir ? dir : "/tmp/nvidia-mps") + "/control";
  return access(control.c_str(), F_OK) == 0;
}

[[noreturn]] void fail(const std::string& what) {
  throw RuntimeError("emulated device: " + what + ": " + std::strerror(errno));
}

class EmulatedRuntime final : public Runtime {
 public:
  bool emulated() const override { return true; }
  std::string kind() const override { return "emulated"; }
  int device_count() override { return 1; }
  void select(int device) override {
    if (device != 0) throw UsageError("the emulated device is device 0 only");
  }
  Info info() override {
    Info i;
    i.index = 0;
    i.name = "emulated device (host memory, for tests)";
    i.uuid = "emulated";
    i.pci_bus_id = "none";
    i.emulated = true;
    i.mps_client = mps_daemon_reachable();
    return i;
  }

  void* alloc_pinned(std::size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!p) throw RuntimeError("emulated device: out of host memory");
    return p;
  }
  void free_pinned(void* p) override { std::free(p); }

  Stream create_stream() override { return &token_; }
  void destroy_stream(Stream) override {}
  void synchronize(Stream) override {}
  bool idle(Stream) override { return true; }
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream) override {
    const double slowdown = slowdown_factor(*this, kind, dst, src);  // a test hook (slowdown.hpp)
    const long long start = steady_now_ns();
    if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
    sleep_for_slowdown(slowdown, start);
  }
  void memset(void* dst, int value, std::size_t bytes, Stream) override {
    std::memset(dst, value, bytes);
  }

  Event create_event(bool) override { return new double(0); }
  void destroy_event(Event e) override { delete static_cast<double*>(e); }
  void record(Event e, Stream) override { *static_cast<double*>(e) = now_ms(); }
  void wait(Stream, Event) override {}
  void host_wait(Event) override {}
  bool done(Event) override { return true; }
  double elapsed_ms(Event from, Event to) override {
    return *static_cast<double*>(to) - *static_cast<double*>(from);
  }

  void write_flag(Stream, std::uint64_t* flag, std::uint64_t value) override {
    std::atomic_ref<std::uint64_t>(*flag).store(value, std::memory_order_release);
  }
  void wait_flag(Stream, const std::uint64_t* flag, std::uint64_t value) override {
    std::atomic_ref<std::uint64_t> f(*const_cast<std::uint64_t*>(flag));
    while (f.load(std::memory_order_acquire) != value) sched_yield();
  }
  std::uint64_t read_flag(const std::uint64_t* flag) override {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(flag))
        .load(std::memory_order_acquire);
  }
  std::string flag_mechanism() const override { return "host"; }

  MemHandle export_memory(void* base) override {
    std::lock_guard lock(mutex_);
    auto it = mine_.find(base);
    if (it == mine_.end()) throw RuntimeError("emulated device: export of an unknown allocation");
    MemHandle h;
    const Shared s{static_cast<std::int32_t>(getpid()), it->second.fd, it->second.bytes};
    std::memcpy(h.bytes.data(), &s, sizeof s);
    return h;
  }
  void* open_memory(const MemHandle& h) override {
    Shared s;
    std::memcpy(&s, h.bytes.data(), sizeof s);
    const std::string path = "/proc/" + std::to_string(s.pid) + "/fd/" + std::to_string(s.fd);
    const int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) fail("open " + path);
    void* p = ::mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) fail("mmap a peer's allocation");
    std::lock_guard lock(mutex_);
    opened_[p] = s.bytes;
    return p;
  }
  void close_memory(void* p) override {
    std::lock_guard lock(mutex_);
    auto it = opened_.find(p);
    if (it == opened_.end()) return;
    ::munmap(p, it->second);
    opened_.erase(it);
  }
  void begin_capture(Stream) override {
    throw UsageError("CUDA graphs need a GPU: the emulated device has none");
  }
  Graph end_capture(Stream) override { return nullptr; }
  void launch(Graph, Stream) override {}
  void destroy_graph(Graph) override {}

  void reduce(void* out, const void* a, const void* b, std::size_t count, DataType t,
              ReduceOp op, Stream) override {
    host_reducer().reduce(out, a, b, count, t, op);
  }
  void divide(void* buf, std::size_t count, DataType t, int divisor, Stream) override {
    host_reducer().divide(buf, count, t, divisor);
  }
  void copy_kernel(void* dst, const void* src, std::size_t bytes, Stream) override {
    const double slowdown = slowdown_factor(*this, CopyKind::device_to_device, dst, src);
    const long long start = steady_now_ns();
    host_reducer().copy(dst, src, bytes);
    sleep_for_slowdown(slowdown, start);
  }

 protected:
  void* do_alloc(std::size_t bytes) override {
    const int fd = ::memfd_create("collscope-device", MFD_CLOEXEC);
    if (fd < 0) fail("memfd_create");
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      ::close(fd);
      fail("ftruncate " + std::to_string(bytes) + " B");
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail("mmap " + std::to_string(bytes) + " B");
    }
    std::lock_guard lock(mutex_);
    mine_[p] = {fd, bytes};
    return p;
  }
  void do_free(void* p) override {
    std::lock_guard lock(mutex_);
    auto it = mine_.find(p);
    if (it == mine_.end()) return;
    ::munmap(p, it->second.bytes);
    ::close(it->second.fd);
    mine_.erase(it);
  }

 private:
  struct Mine {
    int fd;
    std::uint64_t bytes;
  };
  static double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  int token_ = 0;
  std::mutex mutex_;
  std::map<void*, Mine> mine_;
  std::map<void*, std::uint64_t> opened_;
};

}  // namespace

std::unique_ptr<Runtime> make_emulated_runtime() { return std::make_unique<EmulatedRuntime>(); }

}  // namespace collscope::device
