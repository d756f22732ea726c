#include "collscope/host_executor.hpp"

#include <algorithm>

#include "collscope/executor_sink.hpp"
#include "collscope/progress.hpp"

namespace collscope {

// One call as it was issued: its operations in order, what they name, and what a replay
// needs to bind buffers and run local ops.
struct HostExecutor::Recording {
  enum class Kind : std::uint8_t { step, post_recv, post_send, wait, local };
  struct Op {
    Kind kind;
    std::uint32_t index;  // step: into steps; post_*: into comms; wait: the post; local: into locals
  };
  CallKey key;
  std::vector<std::uint64_t> splits;  // the key's split matrix, owned
  CollArgs call_args;
  int nranks = 1;
  std::vector<std::size_t> scratch;
  std::vector<Op> ops;
  std::vector<CommOp> comms;
  std::vector<LocalOp> locals;
  std::vector<std::pair<const char*, int>> steps;
  std::uint32_t posts = 0;
  bool complete = false;  // false: too long to keep (or not finished): never replayed

  bool matches(const CallKey& k) const {
    return k.schedule == key.schedule && k.extra == key.extra && k.count == key.count &&
           k.segment_bytes == key.segment_bytes && k.dtype == key.dtype && k.op == key.op &&
           k.root == key.root && k.aliasing.kind == key.aliasing.kind &&
           k.aliasing.offset == key.aliasing.offset &&
           std::equal(k.splits.begin(), k.splits.end(), splits.begin(), splits.end());
  }
  // What the sink reads of a call (executor_sink.hpp), as the plan declared it.
  std::span<const std::size_t> scratch_sizes() const { return scratch; }
  const CollArgs& args() const { return call_args; }
  int size() const { return nranks; }
};

// Issues the sequencer's operations to the transport and the host reducer, counting
// every message as it is handed over (executor_sink.hpp).
using HostSink = ExecutorSink<HostExecutor>;

// A HostSink that also writes down what it issues, until there is too much of it.
struct RecordingSink {
  struct Handle {
    Request request;
    std::uint32_t post;
  };
  using Kind = HostExecutor::Recording::Kind;
  HostSink host;
  HostExecutor::Recording& rec;

  // Past kMaxRecorded operations the call is not kept, and nothing more is written.
  bool note(Kind kind, std::uint32_t index) {
    if (rec.complete && rec.ops.size() == HostExecutor::kMaxRecorded) {
      rec.complete = false;
      rec.ops = {};
      rec.comms = {};
      rec.locals = {};
      rec.steps = {};
    }
    if (rec.complete) rec.ops.push_back({kind, index});
    return rec.complete;
  }
  void begin_step(const Step& s) {
    if (note(Kind::step, static_cast<std::uint32_t>(rec.steps.size())))
      rec.steps.emplace_back(s.phase, s.index);
    host.begin_step(s);
  }
  Handle post(Kind kind, const CommOp& op, Request r) {
    if (note(kind, static_cast<std::uint32_t>(rec.comms.size()))) rec.comms.push_back(op);
    return {r, rec.posts++};
  }
  Handle post_recv(const CommOp& op) { return post(Kind::post_recv, op, host.post_recv(op)); }
  Handle post_send(const CommOp& op) { return post(Kind::post_send, op, host.post_send(op)); }
  void wait(Handle& h) {
    note(Kind::wait, h.post);
    host.wait(h.request);
  }
  void local(const LocalOp& op) {
    if (note(Kind::local, static_cast<std::uint32_t>(rec.locals.size()))) rec.locals.push_back(op);
    host.local(op);
  }
};

HostExecutor::HostExecutor(Transport& transport)
    : Executor(transport.size()), transport_(transport), reducer_(host_reducer()),
      scratch_(Plan::kMaxScratch) {}

HostExecutor::~HostExecutor() = default;

void HostExecutor::run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
                       const CallKey* key) {
  HostSink host{*this, plan, buffers, seq};
  Recording* known = key ? kept(*key) : nullptr;
  if (key && !known) {  // a new call: record it as it runs
    Recording& rec = keep(*key, plan);
    RecordingSink sink{host, rec};
    SequencerState<RecordingSink::Handle> state;
    sequence(plan, steps, sink, state);
    rec.scratch.assign(plan.scratch_sizes().begin(), plan.scratch_sizes().end());
  } else {  // no key, or one too long to keep: stream it
    sequence(plan, steps, host, state_);
  }
  // Completed sends may still need this process's progress to be delivered (UCX: data
  // queued while an endpoint wires up): push them out, so a rank that goes quiet after
  // a call strands nothing.
  progress().phase.store("quiesce", std::memory_order_relaxed);
  transport_.quiesce();
}

// The recorded operations, in their order, through the same sink as run()'s: bound,
// reported, counted, resolved and tagged alike.
bool HostExecutor::replay(const CallKey& key, CallBuffers buffers, std::uint32_t seq) {
  Recording* rec = kept(key);
  if (!rec || !rec->complete) return false;
  ++replays_;
  if (replay_requests_.size() < rec->posts) replay_requests_.resize(rec->posts);
  ExecutorSink<HostExecutor, Recording> sink{*this, *rec, buffers, seq};
  std::uint32_t posted = 0;
  for (const Recording::Op& op : rec->ops) {
    switch (op.kind) {
      case Recording::Kind::step: {
        const auto& [phase, index] = rec->steps[op.index];
        sink.enter_step(phase, index);  // begin_step does nothing more on the host
        break;
      }
      case Recording::Kind::post_recv:
        replay_requests_[posted++] = sink.post_recv(rec->comms[op.index]);
        break;
      case Recording::Kind::post_send:
        replay_requests_[posted++] = sink.post_send(rec->comms[op.index]);
        break;
      case Recording::Kind::wait: sink.wait(replay_requests_[op.index]); break;
      case Recording::Kind::local: sink.local(rec->locals[op.index]); break;
    }
  }
  progress().phase.store("quiesce", std::memory_order_relaxed);
  transport_.quiesce();
  return true;
}

HostExecutor::Recording* HostExecutor::kept(const CallKey& key) {
  for (std::size_t i = 0; i < recordings_.size(); ++i) {
    if (!recordings_[i]->matches(key)) continue;
    std::rotate(recordings_.begin(), recordings_.begin() + static_cast<long>(i),
                recordings_.begin() + static_cast<long>(i) + 1);  // most recent first
    return recordings_.front().get();
  }
  return nullptr;
}

HostExecutor::Recording& HostExecutor::keep(const CallKey& key, const Plan& plan) {
  auto rec = std::make_unique<Recording>();
  rec->splits.assign(key.splits.begin(), key.splits.end());
  rec->key = key;
  rec->key.splits = rec->splits;
  rec->call_args = plan.args();
  rec->call_args.splits = rec->splits;
  rec->nranks = plan.size();
  rec->complete = true;
  if (recordings_.size() == kKept) recordings_.pop_back();
  recordings_.insert(recordings_.begin(), std::move(rec));
  return *recordings_.front();
}

void HostExecutor::bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers) {
  buffers_.set_call(buffers);
  for (std::size_t s = 0; s < scratch_sizes.size(); ++s) {
    if (scratch_[s].size() < scratch_sizes[s]) scratch_[s].resize(scratch_sizes[s]);
    buffers_.set_scratch(s, scratch_[s].data());
  }
}

void HostExecutor::local(const LocalOp& op, const CollArgs& a, int nranks) {
  switch (op.kind) {
    case LocalKind::reduce:
      reducer_.reduce(address(op.out), address(op.a), address(op.b), op.bytes / a.elem_size(),
                      a.dtype, a.op);
      break;
    case LocalKind::copy: reducer_.copy(address(op.out), address(op.a), op.bytes); break;
    case LocalKind::divide: reducer_.divide(address(op.out), op.bytes / a.elem_size(), a.dtype, nranks); break;
  }
}

void HostExecutor::copy(void* dst, const void* src, std::size_t bytes) {
  reducer_.copy(dst, src, bytes);
}

}  // namespace collscope
