// The engine a layer computes on: its memory, its compute stream and events, its GEMM
// and its kernels, behind one interface, so each pipeline is written once:
//
//   host      host memory, OpenBLAS (one thread per rank), the kernels as host loops; no
//             streams: every op is done when it returns, an event is the time it was
//             recorded (-m host, the default)
//   device    the device runtime's memory (cached: a block a layer frees is reused
//             once every stream has drained, so no cudaMalloc / cudaFree between
//             iterations and the ipc path maps each peer buffer once), one compute
//             stream, CUDA events; on a GPU cuBLAS and the CUDA kernels, on the emulated
//             device (COLLSCOPE_DEVICE_EMULATION=1) OpenBLAS and the host loops (-m device)
//
// The collectives run on their executors' streams (framework/collective_calls.hpp),
// ordered against the compute stream by events.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collscope/device/runtime.hpp"
#include "collscope/layers/compute/gemm.hpp"
#include "collscope/layers/compute/kernels.hpp"
#include "collscope/types.hpp"

namespace collscope::layers {

// What the GEMMs of a stretch of work did: their flops and the time they took on the
// compute stream (events around each).
struct GemmProfile {
  double flop = 0;
  double ms = 0;
  std::size_t calls = 0;
};

class Engine {
 public:
  using Stream = device::Stream;
  using Event = device::Event;

  Engine(std::unique_ptr<Gemm> gemm, std::unique_ptr<Kernels> kernels);
  virtual ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual MemoryKind memory() const = 0;
  virtual std::string runtime_name() const = 0;  // "host", "cuda", "emulated"

  // Memory: allocate, and give back (reused after the next recycle()).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p, std::size_t bytes) = 0;
  // Every stream has drained: memory given back since the last call may be reused.
  virtual void recycle() {}
  // Frees everything cached (the end of the run); arrays must be gone.
  virtual void release_all() {}

  // The compute stream (null on the host) and work on it.
  virtual Stream stream() const = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void memset(void* p, int value, std::size_t bytes) = 0;
  // Host memory to the engine's and back; each returns once the copy is done (download
  // after the compute stream's earlier work).
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize(Stream s) = 0;
  void synchronize() { synchronize(stream()); }

  virtual Event create_event() = 0;
  virtual void destroy_event(Event e) = 0;
  virtual void record(Event e, Stream s) = 0;
  virtual void wait(Stream s, Event e) = 0;  // the stream waits; the host does not
  // Milliseconds between two recorded events, once both are done.
  virtual double elapsed_ms(Event from, Event to) = 0;

  Gemm& gemm() { return *gemm_; }
  Kernels& kernels() { return *kernels_; }

  // A GEMM on the compute stream; while profiling, timed by events around it.
  void run_gemm(const GemmCall& g);
  void start_gemm_profile();
  // After synchronize(): what the GEMMs since start_gemm_profile() did.
  GemmProfile finish_gemm_profile();

 protected:
  // The derived engine's destructor calls it while its runtime is still there.
  void release_profile_events();

 private:
  Event pooled_event(std::size_t i);

  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<Kernels> kernels_;
  bool profiling_ = false;
  GemmProfile profile_;
  std::vector<Event> profile_events_;  // reused: 2 per GEMM
};

std::unique_ptr<Engine> make_host_engine();
// On `rt`, whose device is selected: cuBLAS and the CUDA kernels on a GPU (UsageError,
// one line, when cuBLAS cannot be opened), OpenBLAS and the host loops on the emulated
// device.
std::unique_ptr<Engine> make_device_engine(device::Runtime& rt);

}  // namespace collscope::layers
