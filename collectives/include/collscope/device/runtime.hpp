// The device runtime: everything collscope asks of a GPU, behind one interface.
//
//   cuda      the CUDA runtime (linked statically: a binary starts on a machine without
//             a driver and says so when asked for a device), kernels in reducers/
//   emulated  host memory standing in for a device, for tests on machines without a
//             GPU: every operation is done at once, in order, so a stream's order holds
//             trivially; memory is shared between processes (memfd), so the IPC path's
//             protocol runs as it does on a GPU. Chosen only by COLLSCOPE_DEVICE_EMULATION=1,
//             and every row and report says "emulated".
//
// A stream and an event are opaque handles (cudaStream_t, cudaEvent_t). Work enqueued on
// a stream runs in order; copy() and the kernels return at once. Allocations made here
// are registered, so the IPC path can name any pointer inside them by (allocation, offset).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collscope/types.hpp"

namespace collscope::device {

using Stream = void*;
using Event = void*;
using Graph = void*;  // an instantiated CUDA graph (cudaGraphExec_t)

// cudaIpcMemHandle_t is 64 opaque bytes.
struct MemHandle {
  std::array<unsigned char, 64> bytes{};
};

enum class CopyKind { host_to_device, device_to_host, device_to_device };

// What a rank records about its GPU (the /runs table and the JSON).
struct Info {
  int index = -1;               // the CUDA device ordinal this rank uses
  std::string name;             // "NVIDIA H100 80GB HBM3"
  std::string uuid;             // "GPU-xxxxxxxx-xxxx-..."
  std::string pci_bus_id;       // "0000:18:00.0"
  std::uint64_t memory_bytes = 0;
  int driver_version = 0;       // cudaDriverGetVersion: 13000 = 13.0
  int runtime_version = 0;      // cudaRuntimeGetVersion
  int multiprocessors = 0;
  bool emulated = false;
  // The context is a client of an MPS server (cudaDevAttrMpsEnabled): the GPU runs its
  // work beside other processes' instead of in time slices. The emulated device says so
  // when CUDA_MPS_PIPE_DIRECTORY names a folder holding an MPS daemon's `control` pipe.
  bool mps_client = false;
};

// An allocation made through Runtime::alloc: the IPC path exports it by id.
struct Allocation {
  void* base = nullptr;
  std::size_t bytes = 0;
  std::uint64_t id = 0;  // unique in this process, never reused
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual bool emulated() const = 0;
  virtual std::string kind() const = 0;  // "cuda", "emulated"

  virtual int device_count() = 0;
  // Makes `device` this process's device (cudaSetDevice); every call after uses it.
  virtual void select(int device) = 0;
  virtual Info info() = 0;

  // Device memory (cudaMalloc, never managed memory), registered for IPC.
  void* alloc(std::size_t bytes);
  // Frees an allocation, unless someone holds it (hold()): then it is retired, and freed
  // when the last hold goes.
  void free(void* p);
  // The registered allocation holding [p, p + bytes), or throws RuntimeError.
  Allocation allocation_of(const void* p, std::size_t bytes) const;
  // Whether p lies in a live allocation of this runtime (not a peer's mapped memory).
  bool owns(const void* p) const;
  // The IPC path holds what it exported: a peer may have it mapped, and CUDA leaves
  // freeing an allocation a peer still maps undefined. Holds count.
  void hold(std::uint64_t id);
  void unhold(std::uint64_t id);
  bool retired(std::uint64_t id) const;  // freed by its owner, still held

  // Page-locked host memory for staging (cudaHostAlloc).
  virtual void* alloc_pinned(std::size_t bytes) = 0;
  virtual void free_pinned(void* p) = 0;

  virtual Stream create_stream() = 0;
  virtual void destroy_stream(Stream s) = 0;
  // The host waits until everything enqueued on s is done, as wait_policy() says (spin,
  // yield: polling; block: sleeping in the driver).
  virtual void synchronize(Stream s) = 0;
  // Whether everything enqueued on s is done (never blocks).
  virtual bool idle(Stream s) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s) = 0;
  virtual void memset(void* dst, int value, std::size_t bytes, Stream s) = 0;

  // Events: a point in a stream. `timing` ones can measure elapsed time between two.
  virtual Event create_event(bool timing = false) = 0;
  virtual void destroy_event(Event e) = 0;
  virtual void record(Event e, Stream s) = 0;
  virtual void wait(Stream s, Event e) = 0;  // the stream waits; the host does not
  virtual void host_wait(Event e) = 0;       // the host waits, as wait_policy() says
  virtual bool done(Event e) = 0;
  // Milliseconds between two recorded timing events, once both are done.
  virtual double elapsed_ms(Event from, Event to) = 0;

  // Flags: 64-bit words in device memory (this runtime's allocations, or a peer's mapped
  // by open_memory) through which ranks order their streams without the host. The
  // stream sets a flag once everything enqueued before is done and visible, and waits
  // until a flag holds a value; neither blocks the host. read_flag is the host's look
  // (diagnostics only).
  virtual void write_flag(Stream s, std::uint64_t* flag, std::uint64_t value) = 0;
  virtual void wait_flag(Stream s, const std::uint64_t* flag, std::uint64_t value) = 0;
  virtual std::uint64_t read_flag(const std::uint64_t* flag) = 0;
  // How flags are set and awaited: "memop" (the GPU's stream memory operations),
  // "kernel" (one-thread kernels), "host" (the emulation).
  virtual std::string flag_mechanism() const = 0;

  // CUDA IPC: export an allocation (by its base); open a peer's once (the caller caches)
  // and close it before the peer frees it.
  virtual MemHandle export_memory(void* base) = 0;
  virtual void* open_memory(const MemHandle& h) = 0;
  virtual void close_memory(void* p) = 0;

  // CUDA graphs: work enqueued on s between begin_capture and end_capture is recorded,
  // not run; launch() runs the recording again. The host emulation has none.
  virtual void begin_capture(Stream s) = 0;
  virtual Graph end_capture(Stream s) = 0;
  virtual void launch(Graph g, Stream s) = 0;
  virtual void destroy_graph(Graph g) = 0;

  // Kernels, on stream s. out = a op b element-wise (out may be a or b; a or b may be a
  // peer's mapped memory); avg reduces as sum. divide: buf /= divisor (floating types).
  // copy_kernel: a device-to-device copy by a kernel rather than a copy engine.
  virtual void reduce(void* out, const void* a, const void* b, std::size_t count, DataType t,
                      ReduceOp op, Stream s) = 0;
  virtual void divide(void* buf, std::size_t count, DataType t, int divisor, Stream s) = 0;
  virtual void copy_kernel(void* dst, const void* src, std::size_t bytes, Stream s) = 0;

 protected:
  virtual void* do_alloc(std::size_t bytes) = 0;
  virtual void do_free(void* p) = 0;

 private:
  struct Registered {
    Allocation allocation;
    int holds = 0;
    bool retired = false;
  };
  std::vector<Registered>::iterator find_id(std::uint64_t id);

  mutable std::mutex mutex_;
  std::vector<Registered> allocations_;
  std::uint64_t next_id_ = 1;
};

// Why this process has no device runtime, or "" when it has one.
std::string unavailable_reason();
// This process's runtime: the host emulation where COLLSCOPE_DEVICE_EMULATION=1, else
// CUDA where the build has it and a device is visible. Throws UsageError with the reason
// otherwise (the caller exits 2).
Runtime& runtime();

// Device memory that frees itself.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Runtime& rt, std::size_t bytes) : rt_(&rt), p_(rt.alloc(bytes)), bytes_(bytes) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : rt_(o.rt_), p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      rt_ = o.rt_, p_ = o.p_, bytes_ = o.bytes_;
      o.p_ = nullptr;
    }
    return *this;
  }
  void reset() {
    if (p_) rt_->free(p_);
    p_ = nullptr;
  }
  std::byte* get() const { return static_cast<std::byte*>(p_); }
  std::size_t size() const { return bytes_; }

 private:
  Runtime* rt_ = nullptr;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace collscope::device
