#include "collscope/host_executor.hpp"

#include <stdexcept>

#include "collscope/progress.hpp"

namespace collscope {
namespace {

constexpr int kRecvBase = 0, kSendBase = 1, kScratchBase = 2;

}  // namespace

HostExecutor::HostExecutor(Transport& transport)
    : Executor(transport.size()), transport_(transport), reducer_(host_reducer()),
      scratch_(Plan::kMaxScratch) {}

void HostExecutor::run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq) {
  sequencer_.start(plan, steps);
  // The first action resumes the schedule up to its first step: by then it has declared
  // its scratch, so the buffers are bound before anything runs.
  const Action* a = &sequencer_.next();
  bind(plan, buffers);
  Progress& p = progress();
  for (; a->kind != Action::Kind::end; a = &sequencer_.next()) {
    switch (a->kind) {
      case Action::Kind::begin_step:
        p.phase.store(a->step->phase, std::memory_order_relaxed);
        p.step.store(a->step->index, std::memory_order_relaxed);
        break;
      case Action::Kind::post_recv:
      case Action::Kind::post_send: post(*a->comm, a->id, seq); break;
      case Action::Kind::wait: {
        Request r{static_cast<int>(sequencer_.handle(a->id))};
        transport_.wait(r);
        break;
      }
      case Action::Kind::local: local(*a->local, plan); break;
      case Action::Kind::end: break;
    }
  }
  // Completed sends may still need this process's progress to be delivered (UCX: data
  // queued while an endpoint wires up): push them out, so a rank that goes quiet after
  // a call strands nothing.
  p.phase.store("quiesce", std::memory_order_relaxed);
  transport_.quiesce();
}

void HostExecutor::bind(const Plan& plan, CallBuffers buffers) {
  base_[kRecvBase] = static_cast<std::byte*>(buffers.recv);
  // Only an in-place call writes through the send region, and then it is the receive
  // buffer's memory (schedules never write Region::send: StepBuilder refuses it).
  base_[kSendBase] = const_cast<std::byte*>(static_cast<const std::byte*>(buffers.send));
  const auto sizes = plan.scratch_sizes();
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    if (scratch_[s].size() < sizes[s]) scratch_[s].resize(sizes[s]);
    base_[kScratchBase + s] = scratch_[s].data();
  }
}

std::byte* HostExecutor::address(BufRef ref) const {
  switch (ref.region) {
    case Region::recv: return base_[kRecvBase] + ref.offset;
    case Region::send: return base_[kSendBase] + ref.offset;
    case Region::scratch: return base_[kScratchBase + ref.slot] + ref.offset;
  }
  return nullptr;
}

void HostExecutor::post(const CommOp& op, std::uint32_t id, std::uint32_t seq) {
  const Tag tag{seq, op.tag};
  Request r;
  switch (op.kind) {
    case CommKind::send: r = transport_.isend(op.peer, address(op.buf), op.bytes, MemoryKind::host, tag); break;
    case CommKind::recv: r = transport_.irecv(op.peer, address(op.buf), op.bytes, MemoryKind::host, tag); break;
    case CommKind::signal: r = transport_.isend(op.peer, nullptr, 0, MemoryKind::host, tag); break;
    case CommKind::wait_signal: r = transport_.irecv(op.peer, nullptr, 0, MemoryKind::host, tag); break;
  }
  traffic_.count(op);
  sequencer_.handle(id) = static_cast<std::uint64_t>(static_cast<std::int64_t>(r.slot));
}

void HostExecutor::local(const LocalOp& op, const Plan& plan) {
  const CollArgs& a = plan.args();
  switch (op.kind) {
    case LocalKind::reduce:
      reducer_.reduce(address(op.out), address(op.a), address(op.b), op.bytes / a.elem_size(),
                      a.dtype, a.op);
      break;
    case LocalKind::copy: reducer_.copy(address(op.out), address(op.a), op.bytes); break;
    case LocalKind::divide:
      reducer_.divide(address(op.out), op.bytes / a.elem_size(), a.dtype, plan.size());
      break;
  }
}

void HostExecutor::copy(void* dst, const void* src, std::size_t bytes) {
  reducer_.copy(dst, src, bytes);
}

}  // namespace collscope
