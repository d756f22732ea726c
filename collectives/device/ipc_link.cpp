// The ipc path: ranks of one node read each other's device memory (CUDA IPC).
//
// One message from S to R:
//   S  records an interprocess event on its stream (the data is ready there) and sends R
//      a control message: the allocation's IPC handle and id, the offset, the length,
//      the event's handle;
//   R  (at wait) opens the allocation and the event once per peer (cached), makes its
//      stream wait for the event, enqueues the copy out of S's memory into its own, and
//      records a local event after it;
//   R  once that copy is done, sends S an acknowledgement naming S's event;
//   S  (at wait) receives it: the source may be overwritten. Acknowledgements of one
//      tag arrive in the order of the messages (R copies them in the order it posted
//      their receives, which matched S's sends in order); S checks the event it names.
// No GPU ever spins: streams wait on events, hosts on messages and blocking-sync events.
//
// Why no deadlock: a stream only ever waits for an event its peer recorded before it
// sent the control message, so every wait refers to work already enqueued. R holds its
// acknowledgements back to batch the host's waits for copies, but sends all it holds
// before it blocks on anything (a control message, an acknowledgement) and at the end of
// the call, so no rank waits for an acknowledgement that its peer sits on.
//
// An event of S is recorded again only after R acknowledged the message it announced
// (R has made its stream wait by then): a wait can never see a later recording.
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "collscope/errors.hpp"
#include "links.hpp"

namespace collscope::device {
namespace {

// The control message. `bytes` = 0 with `event` = -1: a signal.
struct Control {
  std::uint64_t allocation = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::int32_t event = -1;
  std::int32_t unused = 0;
  MemHandle memory;
  EventHandle event_handle;
};

class IpcLink final : public Link {
 public:
  IpcLink(LinkContext ctx, std::unique_ptr<Transport> control, std::unique_ptr<Transport> acks)
      : ctx_(ctx), control_(std::move(control)), acks_(std::move(acks)) {}

  ~IpcLink() override {
    try {
      ctx_.rt.synchronize(ctx_.stream);
      forget_buffers();
    } catch (...) {
    }
    for (Event e : events_) ctx_.rt.destroy_event(e);
    for (Event e : done_free_) ctx_.rt.destroy_event(e);
    for (auto& [key, e] : opened_events_) ctx_.rt.destroy_event(e);
  }

  int post_send(const CommOp& op, const std::byte* at, Tag tag) override {
    const int h = messages_.take();
    Message& m = messages_[h];
    m.peer = op.peer;
    if (at && op.bytes > 0) {
      const Allocation a = ctx_.rt.allocation_of(at, op.bytes);
      m.event = take_event();
      ctx_.rt.record(events_[static_cast<std::size_t>(m.event)], ctx_.stream);
      m.control = {a.id, static_cast<std::uint64_t>(at - static_cast<std::byte*>(a.base)),
                   op.bytes, m.event, 0, exported(a), event_handles_[static_cast<std::size_t>(m.event)]};
      m.ack = acks_->irecv(op.peer, &m.acked, sizeof m.acked, MemoryKind::host, tag);
    }
    m.request = control_->isend(op.peer, &m.control, sizeof(Control), MemoryKind::host, tag);
    return h;
  }

  int post_recv(const CommOp& op, std::byte* at, Tag tag) override {
    const int h = messages_.take();
    Message& m = messages_[h];
    m.recv = true;
    m.peer = op.peer;
    m.tag = tag;
    m.into = at;
    m.bytes = at ? op.bytes : 0;
    m.request = control_->irecv(op.peer, &m.control, sizeof(Control), MemoryKind::host, tag);
    return h;
  }

  void wait(int h) override {
    send_acknowledgements();
    Message& m = messages_[h];
    control_->wait(m.request);
    if (m.recv) {
      copy_in(m);
    } else if (m.event >= 0) {
      acks_->wait(m.ack);
      if (m.acked != m.event)
        throw RuntimeError("ipc path: rank " + std::to_string(m.peer) +
                           " acknowledged another message than the one it copied");
      free_events_.push_back(m.event);
    }
    messages_.give(h);
  }

  void end_call() override {
    send_acknowledgements();
    for (Request& r : ack_sends_) acks_->wait(r);
    ack_sends_.clear();
    ack_values_.clear();
    control_->quiesce();
    acks_->quiesce();
  }

  // Peers' allocations may be freed now: unmap them all (reopened when met again).
  void forget_buffers() override {
    ctx_.rt.synchronize(ctx_.stream);
    for (auto& [key, p] : opened_) ctx_.rt.close_memory(p);
    opened_.clear();
  }

 private:
  struct Message {
    bool recv = false;
    int peer = -1;
    Tag tag;
    std::byte* into = nullptr;
    std::size_t bytes = 0;
    int event = -1;
    std::int32_t acked = -1;  // the event the acknowledgement names
    Request request, ack;
    Control control;
  };
  struct Pending {
    int peer;
    Tag tag;
    std::int32_t event;  // the sender's, named in the acknowledgement
    Event done;
  };

  void copy_in(Message& m) {
    const Control& c = m.control;
    if (c.bytes != m.bytes)
      throw RuntimeError("ipc path: expected " + std::to_string(m.bytes) + " B from rank " +
                         std::to_string(m.peer) + ", its message announces " +
                         std::to_string(c.bytes) + " B");
    if (m.bytes == 0) return;  // a signal
    const std::byte* from = static_cast<const std::byte*>(open(m.peer, c)) + c.offset;
    ctx_.rt.wait(ctx_.stream, opened_event(m.peer, c));
    ctx_.rt.copy(m.into, from, m.bytes, CopyKind::device_to_device, ctx_.stream);
    ctx_.stream_busy = true;
    ctx_.copies.from_peer += m.bytes;
    Event done = take_done_event();
    ctx_.rt.record(done, ctx_.stream);
    pending_.push_back({m.peer, m.tag, c.event, done});
  }

  // Acknowledges every copy enqueued so far, once it is done.
  void send_acknowledgements() {
    for (const Pending& p : pending_) {
      ctx_.rt.synchronize_event(p.done);
      done_free_.push_back(p.done);
      ack_values_.push_back(p.event);  // a deque: the address stays while the send is out
      ack_sends_.push_back(
          acks_->isend(p.peer, &ack_values_.back(), sizeof(std::int32_t), MemoryKind::host, p.tag));
    }
    pending_.clear();
  }

  const MemHandle& exported(const Allocation& a) {
    auto it = exported_.find(a.id);
    if (it == exported_.end()) it = exported_.emplace(a.id, ctx_.rt.export_memory(a.base)).first;
    return it->second;
  }
  void* open(int peer, const Control& c) {
    const auto key = std::make_pair(peer, c.allocation);
    auto it = opened_.find(key);
    if (it == opened_.end()) it = opened_.emplace(key, ctx_.rt.open_memory(c.memory)).first;
    return it->second;
  }
  Event opened_event(int peer, const Control& c) {
    const auto key = std::make_pair(peer, static_cast<std::uint64_t>(c.event));
    auto it = opened_events_.find(key);
    if (it == opened_events_.end())
      it = opened_events_.emplace(key, ctx_.rt.open_event(c.event_handle)).first;
    return it->second;
  }
  int take_event() {
    if (!free_events_.empty()) {
      const int e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    events_.push_back(ctx_.rt.create_event(true));
    event_handles_.push_back(ctx_.rt.export_event(events_.back()));
    return static_cast<int>(events_.size() - 1);
  }
  Event take_done_event() {
    if (done_free_.empty()) return ctx_.rt.create_event(false);
    Event e = done_free_.back();
    done_free_.pop_back();
    return e;
  }

  LinkContext ctx_;
  std::unique_ptr<Transport> control_, acks_;
  Slots<Message> messages_;
  std::vector<Event> events_;               // this rank's interprocess events
  std::vector<EventHandle> event_handles_;  // and their handles
  std::vector<int> free_events_;
  std::vector<Event> done_free_;            // local "copy done" events
  std::vector<Pending> pending_;            // copies not yet acknowledged
  std::vector<Request> ack_sends_;
  std::deque<std::int32_t> ack_values_;
  std::unordered_map<std::uint64_t, MemHandle> exported_;
  std::map<std::pair<int, std::uint64_t>, void*> opened_;
  std::map<std::pair<int, std::uint64_t>, Event> opened_events_;
};

}  // namespace

std::unique_ptr<Link> make_ipc_link(LinkContext ctx, std::unique_ptr<Transport> control,
                                    std::unique_ptr<Transport> acks) {
  return std::make_unique<IpcLink>(ctx, std::move(control), std::move(acks));
}

}  // namespace collscope::device
