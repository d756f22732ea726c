// The ipc path: ranks of one node read each other's device memory (CUDA IPC), and order
// their streams through flags in device memory; the host never waits for the GPU inside
// a call.
//
// Every rank owns a flag page (device memory, mapped by every peer once): for each peer q,
// K `ready` words that q sets when a message to this rank is ready, and K `done` words
// that q sets when it has consumed a message from this rank.
//
// One message from S to R, the j-th S sends R in this call (slot j % K, value v: S's call
// number and j, never seen before in that slot):
//   S  post:  its stream sets R's ready[S][slot] = v (after everything S enqueued before:
//             the data is there); its host sends R a control message: the allocation
//             (IPC handle, id), the offset, the length, slot and v
//   R  wait:  its host takes the control message (a host-to-host message: no GPU in it),
//             maps S's allocation if it has not yet (kept until S frees it), and enqueues:
//             wait until ready[S][slot] == v; copy out of S's memory (or leave it there
//             for the reduce that consumes it, consumed_receives.hpp); set S's
//             done[R][slot] = v
//   S  wait:  its stream waits until done[R][slot] == v (its source may be overwritten
//             after)
// A signal is the same without data. Streams wait on the GPU (stream memory operations,
// runtime.hpp); the host only posts and polls the small control messages, so a whole
// call is enqueued without the host waiting for the GPU, and can be captured in a CUDA
// graph.
//
// Why a slot's value is never overwritten before it is seen: S sets ready[slot] for
// message j + K only after its stream waited for done of message j (S waits every send
// before it has more than kSendWindow < K in flight, and at the end of each call), and
// R sets done only after its stream saw ready. Values carry the call number, so a slot
// never holds the awaited value by accident; graph replays repeat values, which is why a
// replayed graph must alternate with another (the harness captures two).
//
// Why no deadlock: the order of the streams is the order of the host executor's waits
// over a transport whose sends complete when their receiver has waited for them: the
// sequencer (sequencer.hpp) posts a step's sends before it waits for the step's
// receives, and a send and its receive share a step.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "collscope/errors.hpp"
#include "collscope/progress.hpp"
#include "collscope/sequencer.hpp"
#include "collscope/wait_policy.hpp"
#include "links.hpp"

namespace collscope::device {
namespace {

constexpr std::uint32_t kSlots = 256;  // > kSendWindow + 1: see "never overwritten" above
static_assert(kSlots > kSendWindow + 1);

// Below this, the copy out of a peer's memory is a kernel (no copy engine start-up);
// above, the copy engine (IpcCopy::automatic). docs/gpu.md says how it was chosen.
constexpr std::size_t kKernelCopyBelow = std::size_t{64} << 10;

// The control message. bytes = 0: a signal (no allocation).
struct Control {
  std::uint64_t allocation = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t value = 0;
  std::uint32_t slot = 0;
  std::uint32_t unused = 0;
  MemHandle memory;
};

// This rank's flag page and its peers', each mapped once.
class FlagPages {
 public:
  FlagPages(Runtime& rt, MPI_Comm comm, int rank, int size) : rt_(rt), rank_(rank) {
    const std::size_t bytes = static_cast<std::size_t>(size) * 2 * kSlots * sizeof(std::uint64_t);
    mine_ = static_cast<std::uint64_t*>(rt_.alloc(bytes));
    Stream s = rt_.create_stream();
    rt_.memset(mine_, 0, bytes, s);
    rt_.synchronize(s);
    rt_.destroy_stream(s);
    const MemHandle h = rt_.export_memory(mine_);
    std::vector<MemHandle> all(static_cast<std::size_t>(size));
    MPI_Allgather(&h, sizeof h, MPI_BYTE, all.data(), sizeof h, MPI_BYTE, comm);
    pages_.assign(static_cast<std::size_t>(size), nullptr);
    for (int q = 0; q < size; ++q)
      pages_[static_cast<std::size_t>(q)] =
          q == rank ? mine_ : static_cast<std::uint64_t*>(rt_.open_memory(all[static_cast<std::size_t>(q)]));
  }
  // Unmaps the peers' pages; then, once every peer has (the caller's barrier), free().
  void close_peers() {
    for (std::size_t q = 0; q < pages_.size(); ++q)
      if (pages_[q] && pages_[q] != mine_) rt_.close_memory(pages_[q]);
    pages_.clear();
  }
  void free() { rt_.free(mine_); }

  // On `owner`'s page: `peer` sets it when its message to `owner` in `slot` is ready.
  std::uint64_t* ready(int owner, int peer, std::uint32_t slot) { return word(owner, peer, 0, slot); }
  // On `owner`'s page: `peer` sets it when it consumed `owner`'s message in `slot`.
  std::uint64_t* done(int owner, int peer, std::uint32_t slot) { return word(owner, peer, 1, slot); }

 private:
  std::uint64_t* word(int owner, int peer, int kind, std::uint32_t slot) {
    return pages_[static_cast<std::size_t>(owner)] +
           (static_cast<std::size_t>(peer) * 2 + static_cast<std::size_t>(kind)) * kSlots + slot;
  }
  Runtime& rt_;
  int rank_;
  std::uint64_t* mine_ = nullptr;
  std::vector<std::uint64_t*> pages_;
};

// A flag this rank's stream waits for, kept for the watchdog's sake.
struct Awaited {
  const std::uint64_t* flag;
  std::uint64_t value;
  int peer;
  bool is_recv;
  const char* phase;
  int step;
};

// Waits, with a limit, for the MPI request (teardown: a dead peer must not hang us).
bool completes_within(MPI_Request& r, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < end) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) pause_between_polls(WaitPolicy::yield);
  }
  return done != 0;
}

bool barrier_within(MPI_Comm comm, double seconds) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  return completes_within(r, seconds);
}

std::vector<std::vector<std::uint64_t>> allgather_ids(MPI_Comm comm, const std::vector<std::uint64_t>& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(counts.size());
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) displs[q] = std::exchange(total, total + counts[q]);
  std::vector<std::uint64_t> flat(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), n, MPI_UINT64_T, flat.data(), counts.data(), displs.data(),
                 MPI_UINT64_T, comm);
  std::vector<std::vector<std::uint64_t>> out(counts.size());
  for (std::size_t q = 0; q < counts.size(); ++q)
    out[q].assign(flat.begin() + displs[q], flat.begin() + displs[q] + counts[q]);
  return out;
}

// The buffers this rank exported to its peers (held: freed for real only once every
// peer unmapped them) and the peers' buffers it mapped, each once.
class PeerBuffers {
 public:
  PeerBuffers(Runtime& rt, MPI_Comm comm) : rt_(rt), comm_(comm) {}

  const MemHandle& exported(const Allocation& a) {
    auto it = exported_.find(a.id);
    if (it != exported_.end()) return it->second;
    const MemHandle h = rt_.export_memory(a.base);
    rt_.hold(a.id);  // peers may map it: freed for real only once they unmapped it
    return exported_.emplace(a.id, h).first->second;
  }

  // `peer`'s allocation `allocation`, mapped here (kept until the peer frees it).
  const std::byte* open(int peer, std::uint64_t allocation, const MemHandle& memory) {
    const auto key = std::make_pair(peer, allocation);
    auto it = opened_.find(key);
    if (it == opened_.end()) it = opened_.emplace(key, rt_.open_memory(memory)).first;
    return static_cast<const std::byte*>(it->second);
  }

  // Collective: the allocations this rank exported and has freed since are unmapped by
  // every peer, then freed for real.
  void release_retired() {
    std::vector<std::uint64_t> mine;
    for (const auto& [id, handle] : exported_)
      if (rt_.retired(id)) mine.push_back(id);
    const std::vector<std::vector<std::uint64_t>> all = allgather_ids(comm_, mine);
    for (std::size_t q = 0; q < all.size(); ++q)
      for (std::uint64_t id : all[q]) close(static_cast<int>(q), id);
    MPI_Barrier(comm_);  // every peer has unmapped them
    for (std::uint64_t id : mine) {
      exported_.erase(id);
      rt_.unhold(id);
    }
  }

  void close_all() {
    for (auto& [key, p] : opened_) rt_.close_memory(p);
    opened_.clear();
  }
  // Only once every peer has closed its mappings of them.
  void unhold_all() {
    for (const auto& [id, handle] : exported_) rt_.unhold(id);
  }

  std::size_t mapped() const { return opened_.size(); }

 private:
  void close(int peer, std::uint64_t allocation) {
    auto it = opened_.find({peer, allocation});
    if (it == opened_.end()) return;
    rt_.close_memory(it->second);
    opened_.erase(it);
  }

  Runtime& rt_;
  MPI_Comm comm_;
  std::unordered_map<std::uint64_t, MemHandle> exported_;  // by allocation id, held
  std::map<std::pair<int, std::uint64_t>, void*> opened_;  // (peer, allocation) -> mapping
};

// The flags this rank's stream waits for in a call, kept for the watchdog's sake.
class FlagWaits {
 public:
  explicit FlagWaits(LinkContext ctx) : ctx_(ctx) {}

  void begin_call() { awaited_.clear(); }

  // The stream waits for a flag (on the emulated device, the host does: the watchdog
  // then knows whom for).
  void await(const std::uint64_t* flag, std::uint64_t value, int peer, bool is_recv) {
    Progress& p = progress();
    awaited_.push_back({flag, value, peer, is_recv, p.phase.load(std::memory_order_relaxed),
                        p.step.load(std::memory_order_relaxed)});
    p.wait_is_recv.store(is_recv, std::memory_order_relaxed);
    p.wait_peer.store(peer, std::memory_order_relaxed);
    ctx_.rt.wait_flag(ctx_.stream, flag, value);
    p.wait_peer.store(-1, std::memory_order_relaxed);
    ctx_.stream_busy = true;
  }

  // Names in progress() the first awaited flag not set yet.
  void explain_stall() {
    for (const Awaited& a : awaited_) {
      if (ctx_.rt.read_flag(a.flag) == a.value) continue;
      Progress& p = progress();
      p.phase.store(a.phase, std::memory_order_relaxed);
      p.step.store(a.step, std::memory_order_relaxed);
      p.wait_is_recv.store(a.is_recv, std::memory_order_relaxed);
      p.wait_peer.store(a.peer, std::memory_order_relaxed);
      return;
    }
  }

 private:
  LinkContext ctx_;
  std::vector<Awaited> awaited_;  // this call's
};

// Copies a message out of a peer's memory, with a kernel or the copy engine.
void copy_from_peer(LinkContext& ctx, IpcCopy how, std::byte* into, const std::byte* from, std::size_t bytes) {
  if (bytes == 0) return;
  const bool kernel = how == IpcCopy::kernel || (how == IpcCopy::automatic && bytes < kKernelCopyBelow);
  if (kernel) ctx.rt.copy_kernel(into, from, bytes, ctx.stream);
  else ctx.rt.copy(into, from, bytes, CopyKind::device_to_device, ctx.stream);
  ctx.copies.from_peer += bytes;
}

class IpcLink final : public Link {
 public:
  IpcLink(LinkContext ctx, std::unique_ptr<Transport> control, MPI_Comm comm, const DeviceOptions& options)
      : ctx_(ctx), control_(std::move(control)), options_(options), waits_(ctx) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    flags_ = std::make_unique<FlagPages>(ctx_.rt, comm_, rank_, size_);
    buffers_ = std::make_unique<PeerBuffers>(ctx_.rt, comm_);
    sent_in_call_.assign(static_cast<std::size_t>(size_), 0);
    MPI_Barrier(comm_);  // every page is mapped before anyone writes to one
  }

  ~IpcLink() override { teardown(); }

  void begin_call() override {
    ++call_;
    std::fill(sent_in_call_.begin(), sent_in_call_.end(), 0);
    waits_.begin_call();
  }

  int post_send(const CommOp& op, const std::byte* at, Tag tag) override {
    const int h = messages_.take();
    Message& m = messages_[h];
    m.peer = op.peer;
    const std::uint32_t j = sent_in_call_[static_cast<std::size_t>(op.peer)]++;
    m.control.slot = j % kSlots;
    m.control.value = (call_ << 32) | (static_cast<std::uint64_t>(j) + 1);
    if (at) {
      const Allocation a = ctx_.rt.allocation_of(at, op.bytes);
      m.control.allocation = a.id;
      m.control.offset = static_cast<std::uint64_t>(at - static_cast<std::byte*>(a.base));
      m.control.bytes = op.bytes;
      m.control.memory = buffers_->exported(a);
    }
    ctx_.rt.write_flag(ctx_.stream, flags_->ready(op.peer, rank_, m.control.slot), m.control.value);
    ctx_.stream_busy = true;
    m.request = control_->isend(op.peer, &m.control, sizeof(Control), MemoryKind::host, tag);
    return h;
  }

  int post_recv(const CommOp& op, std::byte* at, Tag tag, bool consumed) override {
    const int h = messages_.take();
    Message& m = messages_[h];
    m.recv = true;
    m.peer = op.peer;
    m.into = at;
    m.bytes = at ? op.bytes : 0;
    m.consumed = consumed && options_.fuse && at;
    m.request = control_->irecv(op.peer, &m.control, sizeof(Control), MemoryKind::host, tag);
    return h;
  }

  void wait(int h) override {
    Message& m = messages_[h];
    wait_request(*control_, m.request, m.peer, m.recv);
    if (m.recv) take(m);
    else waits_.await(flags_->done(rank_, m.peer, m.control.slot), m.control.value, m.peer, false);
    messages_.give(h);
  }

  const std::byte* consumed_source(const std::byte* at) override {
    for (const Pending& p : pending_)
      if (p.into == at) return p.from;
    return nullptr;
  }

  void consumed(const std::byte* at) override {
    auto it = std::find_if(pending_.begin(), pending_.end(), [at](const Pending& p) { return p.into == at; });
    if (it == pending_.end()) return;
    ctx_.copies.reduced_from_peer += it->bytes;
    set_done(*it);
    pending_.erase(it);
  }

  // A consumed receive whose reduce never came (a schedule that breaks consumed_-
  // receives' rule) is copied after all, so the data is right and the counts tell.
  void end_call() override {
    for (const Pending& p : pending_) {
      copy_from_peer(ctx_, options_.ipc_copy, p.into, p.from, p.bytes);
      set_done(p);
    }
    pending_.clear();
    control_->quiesce();
  }

  void release_freed_buffers() override {
    ctx_.rt.synchronize(ctx_.stream);  // no copy of ours still reads a peer's buffer
    ctx_.stream_busy = false;
    buffers_->release_retired();
  }

  std::size_t mapped_peer_buffers() const override { return buffers_->mapped(); }

  void explain_stall() override { waits_.explain_stall(); }

 private:
  struct Message {
    bool recv = false;
    bool consumed = false;
    int peer = -1;
    std::byte* into = nullptr;
    std::size_t bytes = 0;
    Request request;
    Control control;
  };
  // A consumed receive left in its sender's memory.
  struct Pending {
    std::byte* into;
    const std::byte* from;
    std::size_t bytes;
    int peer;
    std::uint32_t slot;
    std::uint64_t value;
  };

  // A receive's control message has arrived: wait for the data on the stream, then
  // copy it (or leave it for its reduce) and tell the sender.
  void take(Message& m) {
    const Control& c = m.control;
    if (c.bytes != m.bytes)
      throw RuntimeError("ipc path: expected " + std::to_string(m.bytes) + " B from rank " +
                         std::to_string(m.peer) + ", its message announces " +
                         std::to_string(c.bytes) + " B");
    waits_.await(flags_->ready(rank_, m.peer, c.slot), c.value, m.peer, true);
    const std::byte* from = m.bytes ? buffers_->open(m.peer, c.allocation, c.memory) + c.offset : nullptr;
    const Pending p{m.into, from, m.bytes, m.peer, c.slot, c.value};
    if (m.consumed) {
      pending_.push_back(p);
      return;
    }
    copy_from_peer(ctx_, options_.ipc_copy, p.into, p.from, p.bytes);
    set_done(p);
  }

  void set_done(const Pending& p) {
    ctx_.rt.write_flag(ctx_.stream, flags_->done(p.peer, rank_, p.slot), p.value);
    ctx_.stream_busy = true;
  }

  // Every peer unmaps before anything is freed. A peer that is gone (the job is failing)
  // must not hang the exit: each wait has a limit, and past it nothing is freed.
  void teardown() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ctx_.rt.idle(ctx_.stream) && std::chrono::steady_clock::now() < end)
      pause_between_polls(WaitPolicy::yield);
    const bool together = barrier_within(comm_, 10);
    buffers_->close_all();
    flags_->close_peers();
    if (together && barrier_within(comm_, 10)) {
      buffers_->unhold_all();
      flags_->free();
    }
    MPI_Comm_free(&comm_);
  }

  LinkContext ctx_;
  std::unique_ptr<Transport> control_;
  DeviceOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<FlagPages> flags_;
  std::unique_ptr<PeerBuffers> buffers_;
  FlagWaits waits_;
  std::uint64_t call_ = 0;
  std::vector<std::uint32_t> sent_in_call_;  // per peer
  Slots<Message> messages_;
  std::vector<Pending> pending_;
};

}  // namespace

std::unique_ptr<Link> make_ipc_link(LinkContext ctx, std::unique_ptr<Transport> control,
                                    MPI_Comm comm, const DeviceOptions& options) {
  return std::make_unique<IpcLink>(ctx, std::move(control), comm, options);
}

}  // namespace collscope::device
