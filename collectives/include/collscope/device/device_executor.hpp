// The device executor: runs a schedule on GPU memory, in the sequencer's order
// (sequencer.hpp), with the reductions and copies as kernels on one stream, and each
// message carried by a path:
//
//   cuda_aware  the transport (an MPI or UCX built with CUDA) takes device pointers; the
//               stream is drained before a message is posted, so the library sees
//               finished data
//   staged      through pinned host memory, over MPI or UCX, in chunks: a send copies
//               chunk k+1 to the host while chunk k is on the wire, a receive copies
//               chunk k to the device while chunk k+1 arrives
//   ipc         ranks of one node: the receiver copies straight out of the sender's
//               device memory (CUDA IPC), or reduces straight from it; the streams order
//               themselves through flags in device memory, so the host enqueues a whole
//               call without waiting for the GPU (device/ipc_link.cpp)
//
// A call completes on the stream: the caller times run() + synchronize(). Where the host
// must wait (synchronize, a staged chunk, a transport request) it polls or sleeps as
// wait_policy() says. Messages are counted as the host executor counts them (the
// schedule's, not the path's chunks or control messages); the path's copies are counted
// apart (Traffic::copies()).
#pragma once

#include <mpi.h>

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/device/runtime.hpp"
#include "collscope/device/stream_work.hpp"
#include "collscope/executor.hpp"
#include "collscope/sequencer.hpp"
#include "collscope/transport.hpp"
#include "collscope/types.hpp"

namespace collscope {

template <class Ex, class Call>
struct ExecutorSink;

// The staged path's chunk: small enough to pipeline, large enough to reach the wire's
// bandwidth.
inline constexpr std::size_t kDefaultStageChunk = std::size_t{1} << 20;

// The ipc path's copy out of a peer's memory: by the copy engine, by a kernel, or
// (automatic) a kernel for small messages and the copy engine for large ones.
enum class IpcCopy { automatic, engine, kernel };
std::string_view ipc_copy_name(IpcCopy c);
std::optional<IpcCopy> parse_ipc_copy(std::string_view s);

// What shapes the paths: the staged path's chunk; the ipc path's copy, and whether it
// reduces consumed receives straight from the sender's memory (consumed_receives.hpp).
struct DeviceOptions {
  std::size_t stage_chunk = kDefaultStageChunk;
  IpcCopy ipc_copy = IpcCopy::automatic;
  bool fuse = true;
};

namespace device {
class Link;  // a path's message mechanics (device/links.hpp)
}

class DeviceExecutor final : public Executor {
 public:
  // Collective over `comm`: sets up the path's transports and checks it can run here
  // (cuda_aware: the library takes device pointers; ipc: every rank on one node), with a
  // UsageError otherwise. No path: cuda_aware where the library takes device pointers,
  // else staged. `transport` is mpi or ucx; `node_of_rank` from node_map.
  DeviceExecutor(device::Runtime& rt, std::optional<DevicePath> path, TransportKind transport,
                 MPI_Comm comm, const std::vector<int>& node_of_rank,
                 const DeviceOptions& options = {});
  ~DeviceExecutor() override;

  std::string name() const override { return std::string(transport_name(transport_)); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Queue queue() const override { return {stream_}; }
  std::string path() const override { return std::string(path_name(path_)); }
  std::optional<DevicePath> device_path() const override { return path_; }

  void run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
           const CallKey* key = nullptr) override;
  void synchronize() override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void release_freed_buffers() override;

  device::Runtime& runtime() { return rt_; }
  // Peers' buffers the path keeps mapped (ipc: until their owner frees them).
  std::size_t mapped_peer_buffers() const;
  device::Stream stream() const { return stream_; }

 private:
  friend struct ExecutorSink<DeviceExecutor, Plan>;
  // What the sink (executor_sink.hpp) issues: messages to the path, local ops as kernels.
  using Handle = int;
  void begin_step(const Plan& plan, const Step& s);
  int post_recv(const CommOp& op, std::byte* into, Tag tag);
  int post_send(const CommOp& op, const std::byte* from, Tag tag);
  void wait(int& h);
  void bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers);
  std::byte* address(BufRef ref) const { return buffers_.address(ref); }
  void local(const LocalOp& op, const CollArgs& args, int nranks);
  // The stream waits for a while: how long, and what for (the link's guess).
  void wait_for_stream();

  device::Runtime& rt_;
  DevicePath path_;
  TransportKind transport_;
  int rank_ = 0, size_ = 1;
  device::Stream stream_ = nullptr;
  bool stream_busy_ = false;  // work enqueued since the stream was last drained
  std::unique_ptr<device::Link> link_;
  SequencerState<int> state_;
  std::vector<int> consumer_;  // the current step's consumed receives
  const Step* step_ = nullptr;  // the step being issued
  BufferTable buffers_;  // the call's buffers and the scratch slots
  std::optional<device::StreamScratch> scratch_;
};

}  // namespace collscope
