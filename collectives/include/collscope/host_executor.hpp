// The host executor: runs a schedule over a Transport (MPI, UCX) on host memory, with
// the host reducer, in the order the sequencer gives (sequencer.hpp). A call is
// complete when run() returns. Scratch buffers are kept between calls, one per slot.
//
// A call run with a key is recorded as it is issued (up to kMaxRecorded operations)
// and kept (the last kKept calls); the same call again is replayed from the recording:
// the same operations in the same order, through the same sink (executor_sink.hpp:
// bound, counted and tagged the same way), without making the schedule again. A
// benchmark's thousands of identical small calls then pay for the schedule once, the
// way persistent collectives do; a long pipelined call is not kept (its steps cost
// nothing beside its data).
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "collscope/executor.hpp"
#include "collscope/reducer.hpp"
#include "collscope/sequencer.hpp"
#include "collscope/transport.hpp"

namespace collscope {

template <class Ex, class Call>
struct ExecutorSink;

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(Transport& transport);
  ~HostExecutor() override;

  std::string name() const override { return transport_.name(); }
  int rank() const override { return transport_.rank(); }
  int size() const override { return transport_.size(); }
  static constexpr std::size_t kMaxRecorded = 4096, kKept = 8;

  void run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
           const CallKey* key = nullptr) override;
  bool replay(const CallKey& key, CallBuffers buffers, std::uint32_t seq) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;

  Transport& transport() { return transport_; }
  std::uint64_t replays() const { return replays_; }  // calls replayed so far

 private:
  struct Recording;  // host_executor.cpp
  friend struct ExecutorSink<HostExecutor, Plan>;       // run()
  friend struct ExecutorSink<HostExecutor, Recording>;  // replay()
  friend struct RecordingSink;

  // What the sink (executor_sink.hpp) issues: messages to the transport, local ops to
  // the host reducer.
  using Handle = Request;
  void begin_step(const Plan&, const Step&) {}
  Request post_recv(const CommOp& op, std::byte* into, Tag tag) {
    return transport_.irecv(op.peer, into, op.bytes, MemoryKind::host, tag);
  }
  Request post_send(const CommOp& op, const std::byte* from, Tag tag) {
    return transport_.isend(op.peer, from, op.bytes, MemoryKind::host, tag);
  }
  void wait(Request& r) { transport_.wait(r); }
  void bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers);
  std::byte* address(BufRef ref) const { return buffers_.address(ref); }
  void local(const LocalOp& op, const CollArgs& args, int nranks);
  Recording* kept(const CallKey& key);
  Recording& keep(const CallKey& key, const Plan& plan);

  Transport& transport_;
  const Reducer& reducer_;
  SequencerState<Request> state_;
  std::vector<std::unique_ptr<Recording>> recordings_;  // most recently used first
  std::vector<Request> replay_requests_;
  std::uint64_t replays_ = 0;
  BufferTable buffers_;  // the call's buffers and the scratch slots
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace collscope
