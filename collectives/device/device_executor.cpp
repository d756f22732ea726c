#include "collscope/device/device_executor.hpp"

#include <algorithm>
#include <chrono>

#include "collscope/consumed_receives.hpp"
#include "collscope/enum_names.hpp"
#include "collscope/errors.hpp"
#include "collscope/executor_sink.hpp"
#include "collscope/progress.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/wait_policy.hpp"
#include "links.hpp"

namespace collscope {
namespace {

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
                   TransportKind transport, MPI_Comm comm,
                   const std::vector<int>& node_of_rank, const DeviceOptions& options) {
  const std::size_t chunk = options.stage_chunk;
  if (chunk == 0) throw UsageError("--stage-chunk must be at least 1 byte");
  if (path == DevicePath::ipc) {
    if (const int r = first_rank_elsewhere(node_of_rank); r >= 0)
      throw UsageError("--path ipc needs every rank on one node (rank " + std::to_string(r) +
                       " is on another node than rank 0)");
    return {device::make_ipc_link(ctx, make_transport(transport, comm), comm, options),
            DevicePath::ipc};
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

// In the order of each enum.
constexpr std::string_view kIpcCopyNames[] = {"auto", "engine", "kernel"};

std::string_view ipc_copy_name(IpcCopy c) { return name_of(c, kIpcCopyNames); }
std::optional<IpcCopy> parse_ipc_copy(std::string_view s) { return by_name<IpcCopy>(s, kIpcCopyNames); }

namespace device {

void wait_request(Transport& t, Request& r, int peer, bool is_recv) {
  if (!r.pending()) return;
  if (wait_policy() == WaitPolicy::block) {
    t.wait(r);
    return;
  }
  Progress& p = progress();
  p.wait_is_recv.store(is_recv, std::memory_order_relaxed);
  p.wait_peer.store(peer, std::memory_order_relaxed);
  poll_until([&] { return t.test(r); });
  p.wait_peer.store(-1, std::memory_order_relaxed);
}

}  // namespace device

// Issues the sequencer's operations (executor_sink.hpp): messages to the path, local ops
// as kernels. A receive that a reduce of its step consumes (consumed_receives.hpp) is
// posted as such: the ipc path may leave it in the sender's memory, and the reduce then
// reads it there.
using DeviceSink = ExecutorSink<DeviceExecutor>;

void DeviceExecutor::begin_step(const Plan& plan, const Step& s) {
  consumed_receives(plan, s, consumer_);
  step_ = &s;
}

int DeviceExecutor::post_recv(const CommOp& op, std::byte* into, Tag tag) {
  const bool consumed = consumer_[static_cast<std::size_t>(&op - step_->comm.data())] >= 0;
  return link_->post_recv(op, into, tag, consumed);
}

int DeviceExecutor::post_send(const CommOp& op, const std::byte* from, Tag tag) {
  return link_->post_send(op, from, tag);
}

void DeviceExecutor::wait(int& h) { link_->wait(h); }

DeviceExecutor::DeviceExecutor(device::Runtime& rt, std::optional<DevicePath> path,
                               TransportKind transport, MPI_Comm comm,
                               const std::vector<int>& node_of_rank, const DeviceOptions& options)
    : Executor(0), rt_(rt), transport_(transport) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  traffic_ = Traffic(size_);
  stream_ = rt_.create_stream();
  scratch_.emplace(rt_, stream_);
  device::LinkContext ctx{rt_, stream_, traffic_.copies(), stream_busy_};
  try {
    MadeLink made = make_link(ctx, path, transport_, comm, node_of_rank, options);
    link_ = std::move(made.link);
    path_ = made.path;
  } catch (...) {
    rt_.destroy_stream(stream_);
    throw;
  }
}

DeviceExecutor::~DeviceExecutor() {
  link_.reset();
  scratch_.reset();
  rt_.destroy_stream(stream_);
}

void DeviceExecutor::run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
                         const CallKey*) {
  DeviceSink sink{*this, plan, buffers, seq};
  link_->begin_call();
  sequence(plan, steps, sink, state_);
  progress().phase.store("quiesce", std::memory_order_relaxed);
  link_->end_call();
}

void DeviceExecutor::synchronize() {
  progress().phase.store("stream", std::memory_order_relaxed);
  if (wait_policy() == WaitPolicy::block) rt_.synchronize(stream_);
  else if (!rt_.idle(stream_)) wait_for_stream();
  stream_busy_ = false;
  link_->stream_drained();
}

// Polls the stream; past a second, asks the link what the stream waits for, so that the
// watchdog's report names a peer and a step rather than "stream".
void DeviceExecutor::wait_for_stream() {
  using clock = std::chrono::steady_clock;
  auto next_look = clock::now() + std::chrono::seconds(1);
  const WaitPolicy p = wait_policy();
  while (!rt_.idle(stream_)) {
    pause_between_polls(p);
    if (clock::now() < next_look) continue;
    link_->explain_stall();
    next_look = clock::now() + std::chrono::seconds(1);
  }
}

void DeviceExecutor::copy(void* dst, const void* src, std::size_t bytes) {
  rt_.copy(dst, src, bytes, device::CopyKind::device_to_device, stream_);
  stream_busy_ = true;
}

std::size_t DeviceExecutor::mapped_peer_buffers() const { return link_->mapped_peer_buffers(); }

void DeviceExecutor::release_freed_buffers() {
  synchronize();
  link_->release_freed_buffers();
}

void DeviceExecutor::bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers) {
  scratch_->bind(buffers_, scratch_sizes, buffers);
}

// A reduce reading a consumed receive that the path left in its sender's memory reads
// it there (no copy); the path is told once it is enqueued.
void DeviceExecutor::local(const LocalOp& op, const CollArgs& a, int nranks) {
  const std::byte* in_a = address(op.a);
  const std::byte* in_b = address(op.b);
  const std::byte* peer_a = op.kind == LocalKind::reduce ? link_->consumed_source(in_a) : nullptr;
  const std::byte* peer_b = op.kind == LocalKind::reduce ? link_->consumed_source(in_b) : nullptr;
  device::enqueue_local(rt_, stream_, op, address(op.out), peer_a ? peer_a : in_a, peer_b ? peer_b : in_b, a,
                        nranks);
  if (peer_a) link_->consumed(in_a);
  if (peer_b) link_->consumed(in_b);
  stream_busy_ = true;
}

}  // namespace collscope
