// The NCCL executor's class, for the NCCL baselines (vendor.cpp), which call NCCL's own
// collectives on the executor's communicator and stream. Internal to the library.
#pragma once

#include <nccl.h>

#include <array>
#include <span>

#include "collscope/device/stream_work.hpp"
#include "collscope/nccl/library.hpp"
#include "collscope/nccl/nccl_executor.hpp"
#include "collscope/progress.hpp"
#include "collscope/schedule.hpp"
#include "collscope/transport.hpp"

namespace collscope {

template <class Ex, class Call>
struct ExecutorSink;

class NcclExecutor final : public Executor {
 public:
  NcclExecutor(device::Runtime& rt, const nccl::Library& lib, ncclComm_t comm, int rank, int size);
  ~NcclExecutor() override;

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Queue queue() const override { return {stream_}; }
  std::string path() const override { return "nccl"; }

  void run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
           const CallKey* key = nullptr) override;
  void synchronize() override;
  void copy(void* dst, const void* src, std::size_t bytes) override;

  const nccl::Library& lib() const { return lib_; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return static_cast<cudaStream_t>(stream_); }
  device::Runtime& runtime() { return rt_; }
  // Checks an NCCL call on this communicator (its last error included).
  void check(ncclResult_t rc, const char* what) const { lib_.check(rc, what, comm_); }
  // The communicator's asynchronous error, "" when there is none (the watchdog polls it).
  std::string async_error() const;
  // Ends the communicator's work at once (the watchdog's way out of a hang).
  void abort();

 private:
  friend struct ExecutorSink<NcclExecutor, Plan>;
  // What the sink (executor_sink.hpp) issues, each step whole (issue_whole_steps): a
  // group of ncclSend / ncclRecv, then local ops as kernels. Nothing is waited on.
  struct Handle {};
  void bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers);
  std::byte* address(BufRef ref) const { return buffers_.address(ref); }
  void begin_step(const Plan&, const Step& s);  // ncclGroupStart, if it has messages
  void end_step(const Plan&, const Step& s);    // ncclGroupEnd
  Handle post_recv(const CommOp& op, std::byte* into, Tag);
  Handle post_send(const CommOp& op, const std::byte* from, Tag);
  void local(const LocalOp& op, const CollArgs& args, int nranks);

  device::Runtime& rt_;
  const nccl::Library& lib_;
  ncclComm_t comm_;
  int rank_, size_;
  device::Stream stream_ = nullptr;
  device::Buffer empty_;  // where messages of no bytes point (never NULL)
  BufferTable buffers_;  // the call's buffers and the scratch slots
  device::StreamScratch scratch_;
  std::unique_ptr<AbortHook> guard_;  // the watchdog's hold on this communicator
};

// The NCCL executor behind `e`, or nullptr.
NcclExecutor* as_nccl(Executor& e);

}  // namespace collscope
