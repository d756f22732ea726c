#include "collscope/device/device_executor.hpp"

#include <algorithm>

#include "collscope/errors.hpp"
#include "collscope/progress.hpp"
#include "collscope/transport_factory.hpp"
#include "links.hpp"

namespace collscope {
namespace {


void report_step(const char* phase, int index) {
  Progress& p = progress();
  p.phase.store(phase, std::memory_order_relaxed);
  p.step.store(index, std::memory_order_relaxed);
}

// The first rank on another node than rank 0, or -1 when all share one.
int first_rank_elsewhere(const std::vector<int>& node_of_rank) {
  for (std::size_t r = 1; r < node_of_rank.size(); ++r)
    if (node_of_rank[r] != node_of_rank[0]) return static_cast<int>(r);
  return -1;
}

struct MadeLink {
  std::unique_ptr<device::Link> link;
  DevicePath path;
};

MadeLink make_link(device::LinkContext ctx, std::optional<DevicePath> path,
                   const std::string& transport, MPI_Comm comm,
                   const std::vector<int>& node_of_rank, std::size_t chunk) {
  if (chunk == 0) throw UsageError("--stage-chunk must be at least 1 byte");
  if (path == DevicePath::ipc) {
    if (const int r = first_rank_elsewhere(node_of_rank); r >= 0)
      throw UsageError("--path ipc needs every rank on one node (rank " + std::to_string(r) +
                       " is on another node than rank 0)");
    auto control = make_transport(transport, comm);
    auto acks = make_transport(transport, comm);
    return {device::make_ipc_link(ctx, std::move(control), std::move(acks)), DevicePath::ipc};
  }
  auto t = make_transport(transport, comm);
  const std::string refusal = t->device_memory_refusal();
  if (path == DevicePath::cuda_aware && !refusal.empty())
    throw UsageError("--path cuda_aware: " + refusal + " (use --path staged or ipc)");
  if (!path) path = refusal.empty() ? DevicePath::cuda_aware : DevicePath::staged;
  if (*path == DevicePath::cuda_aware)
    return {device::make_cuda_aware_link(ctx, std::move(t)), DevicePath::cuda_aware};
  return {device::make_staged_link(ctx, std::move(t), chunk), DevicePath::staged};
}

}  // namespace

std::string_view path_name(DevicePath p) {
  switch (p) {
    case DevicePath::cuda_aware: return "cuda_aware";
    case DevicePath::staged: return "staged";
    case DevicePath::ipc: return "ipc";
  }
  return "?";
}

std::optional<DevicePath> parse_path(std::string_view s) {
  for (DevicePath p : {DevicePath::cuda_aware, DevicePath::staged, DevicePath::ipc})
    if (s == path_name(p)) return p;
  return std::nullopt;
}

// Issues the sequencer's operations: messages to the path, local ops as kernels.
struct DeviceSink {
  using Handle = int;
  DeviceExecutor& ex;
  const Plan& plan;
  CallBuffers buffers;
  std::uint32_t seq;
  bool bound = false;

  void begin_step(const Step& s) {
    if (!bound) ex.bind(plan.scratch_sizes(), buffers);
    bound = true;
    report_step(s.phase, s.index);
  }
  int post_recv(const CommOp& op) {
    ex.traffic_.count(op);
    std::byte* into = op.kind == CommKind::recv ? ex.address(op.buf) : nullptr;
    return ex.link_->post_recv(op, into, Tag{seq, op.tag});
  }
  int post_send(const CommOp& op) {
    ex.traffic_.count(op);
    const std::byte* from = op.kind == CommKind::send ? ex.address(op.buf) : nullptr;
    return ex.link_->post_send(op, from, Tag{seq, op.tag});
  }
  void wait(int& h) { ex.link_->wait(h); }
  void local(const LocalOp& op) { ex.local(op, plan.args(), plan.size()); }
};

DeviceExecutor::DeviceExecutor(device::Runtime& rt, std::optional<DevicePath> path,
                               const std::string& transport, MPI_Comm comm,
                               const std::vector<int>& node_of_rank, std::size_t stage_chunk)
    : Executor(0), rt_(rt), transport_(transport) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  traffic_ = Traffic(size_);
  stream_ = rt_.create_stream();
  scratch_.resize(Plan::kMaxScratch);
  device::LinkContext ctx{rt_, stream_, traffic_.copies(), stream_busy_};
  try {
    MadeLink made = make_link(ctx, path, transport_, comm, node_of_rank, stage_chunk);
    link_ = std::move(made.link);
    path_ = made.path;
  } catch (...) {
    rt_.destroy_stream(stream_);
    throw;
  }
}

DeviceExecutor::~DeviceExecutor() {
  link_.reset();
  scratch_.clear();
  rt_.destroy_stream(stream_);
}

void DeviceExecutor::run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
                         const CallKey*) {
  DeviceSink sink{*this, plan, buffers, seq};
  sequence(plan, steps, sink, state_);
  progress().phase.store("quiesce", std::memory_order_relaxed);
  link_->end_call();
}

void DeviceExecutor::synchronize() {
  progress().phase.store("stream", std::memory_order_relaxed);
  rt_.synchronize(stream_);
  stream_busy_ = false;
  link_->stream_drained();
}

void DeviceExecutor::copy(void* dst, const void* src, std::size_t bytes) {
  rt_.copy(dst, src, bytes, device::CopyKind::device_to_device, stream_);
  stream_busy_ = true;
}

void DeviceExecutor::forget_buffers() {
  synchronize();
  link_->forget_buffers();
}

void DeviceExecutor::bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers) {
  buffers_.set_call(buffers);
  for (std::size_t s = 0; s < scratch_sizes.size(); ++s) {
    if (scratch_[s].size() < scratch_sizes[s]) {
      rt_.synchronize(stream_);  // the old scratch may still be read by queued work
      scratch_[s] = device::Buffer(rt_, scratch_sizes[s]);
    }
    buffers_.set_scratch(s, scratch_[s].get());
  }
}

void DeviceExecutor::local(const LocalOp& op, const CollArgs& a, int nranks) {
  switch (op.kind) {
    case LocalKind::reduce:
      rt_.reduce(address(op.out), address(op.a), address(op.b), op.bytes / a.elem_size(), a.dtype,
                 a.op, stream_);
      break;
    case LocalKind::copy: rt_.copy_kernel(address(op.out), address(op.a), op.bytes, stream_); break;
    case LocalKind::divide:
      rt_.divide(address(op.out), op.bytes / a.elem_size(), a.dtype, nranks, stream_);
      break;
  }
  stream_busy_ = true;
}

}  // namespace collscope
