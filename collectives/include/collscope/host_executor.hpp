// The host executor: runs a schedule over a Transport (MPI, UCX) on host memory, with
// the host reducer, in the order the Sequencer gives (sequencer.hpp). A call is
// complete when run() returns. Scratch buffers are kept between calls, one per slot.
#pragma once

#include <array>
#include <vector>

#include "collscope/executor.hpp"
#include "collscope/reducer.hpp"
#include "collscope/sequencer.hpp"
#include "collscope/transport.hpp"

namespace collscope {

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(Transport& transport);

  std::string name() const override { return transport_.name(); }
  int rank() const override { return transport_.rank(); }
  int size() const override { return transport_.size(); }
  MemoryKind memory() const override { return MemoryKind::host; }
  Completion completion() const override { return Completion::on_return; }
  void run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;

  Transport& transport() { return transport_; }

 private:
  void bind(const Plan& plan, CallBuffers buffers);
  std::byte* address(BufRef ref) const;
  void post(const CommOp& op, std::uint32_t id, std::uint32_t seq);
  void local(const LocalOp& op, const Plan& plan);

  Transport& transport_;
  const Reducer& reducer_;
  Sequencer sequencer_;
  std::array<std::byte*, 2 + Plan::kMaxScratch> base_{};  // recv, send, scratch slots
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace collscope
