// The staged path: device memory crosses through pinned host chunks over MPI or UCX.
//
//   send     every chunk's device-to-host copy is enqueued at once, each followed by
//            an event; chunk k goes on the wire as soon as its event is done (the host
//            polls it, or sleeps under --wait block), while the copies of k+1, ... go on
//   receive  every chunk's receive is posted at once; at wait(), chunk k is copied to
//            the device as soon as it arrives, while k+1, ... arrive
//
// The chunks of one message travel under the message's tag: both ends cut a message
// the same way and MPI and UCX match messages of one source and tag in order, so chunk k
// meets chunk k. A chunk that fed a host-to-device copy is reused once the copy's event
// is done; until then a new one is allocated (the pool grows to what is in flight).
#include <deque>

#include "links.hpp"

namespace collscope::device {
namespace {

class StagedLink final : public Link {
 public:
  StagedLink(LinkContext ctx, std::unique_ptr<Transport> transport, std::size_t chunk)
      : ctx_(ctx), transport_(std::move(transport)), chunk_(chunk) {}

  ~StagedLink() override {
    try {
      ctx_.rt.synchronize(ctx_.stream);
    } catch (...) {
    }
    for (Releasing& r : releasing_) {
      ctx_.rt.free_pinned(r.chunk);
      ctx_.rt.destroy_event(r.event);
    }
    for (std::byte* c : free_chunks_) ctx_.rt.free_pinned(c);
    for (Event e : free_events_) ctx_.rt.destroy_event(e);
  }

  int post_recv(const CommOp& op, std::byte* at, Tag tag, bool) override {
    const int h = messages_.take();
    Message& m = messages_[h];
    m.recv = true;
    m.peer = op.peer;
    m.device = at;
    m.bytes = at ? op.bytes : 0;
    if (m.bytes == 0) {
      m.requests.push_back(transport_->irecv(op.peer, nullptr, 0, MemoryKind::host, tag));
      return h;
    }
    for (std::size_t off = 0; off < m.bytes; off += chunk_) {
      std::byte* c = take_chunk();
      m.chunks.push_back(c);
      m.requests.push_back(transport_->irecv(op.peer, c, length(m, off), MemoryKind::host, tag));
    }
    return h;
  }

  int post_send(const CommOp& op, const std::byte* at, Tag tag) override {
    const int h = messages_.take();
    Message& m = messages_[h];
    m.peer = op.peer;
    m.bytes = at ? op.bytes : 0;
    if (m.bytes == 0) {
      m.requests.push_back(transport_->isend(op.peer, nullptr, 0, MemoryKind::host, tag));
      return h;
    }
    std::vector<Event>& ready = ready_scratch_;
    ready.clear();
    for (std::size_t off = 0; off < m.bytes; off += chunk_) {
      std::byte* c = take_chunk();
      m.chunks.push_back(c);
      ctx_.rt.copy(c, at + off, length(m, off), CopyKind::device_to_host, ctx_.stream);
      ready.push_back(take_event());
      ctx_.rt.record(ready.back(), ctx_.stream);
    }
    ctx_.copies.to_host += m.bytes;
    std::size_t k = 0;
    for (std::size_t off = 0; off < m.bytes; off += chunk_, ++k) {
      ctx_.rt.host_wait(ready[k]);  // polled (spin, yield) or slept in (block)
      free_events_.push_back(ready[k]);
      m.requests.push_back(
          transport_->isend(op.peer, m.chunks[k], length(m, off), MemoryKind::host, tag));
    }
    return h;
  }

  void wait(int h) override {
    Message& m = messages_[h];
    std::size_t k = 0;
    for (std::size_t off = 0; k < m.requests.size(); off += chunk_, ++k) {
      wait_request(*transport_, m.requests[k], m.peer, m.recv);
      if (m.chunks.empty()) continue;
      if (!m.recv) {
        free_chunks_.push_back(m.chunks[k]);
        continue;
      }
      const std::size_t len = length(m, off);
      ctx_.rt.copy(m.device + off, m.chunks[k], len, CopyKind::host_to_device, ctx_.stream);
      ctx_.stream_busy = true;
      Event e = take_event();
      ctx_.rt.record(e, ctx_.stream);
      releasing_.push_back({m.chunks[k], e});
    }
    if (m.recv) ctx_.copies.to_device += m.bytes;
    messages_.give(h);
  }

  void end_call() override { transport_->quiesce(); }

  // Every copy out of a chunk is done: all of them are free again.
  void stream_drained() override {
    for (Releasing& r : releasing_) {
      free_chunks_.push_back(r.chunk);
      free_events_.push_back(r.event);
    }
    releasing_.clear();
  }

 private:
  struct Message {
    bool recv = false;
    int peer = -1;
    std::byte* device = nullptr;
    std::size_t bytes = 0;
    std::vector<Request> requests;
    std::vector<std::byte*> chunks;
  };
  struct Releasing {
    std::byte* chunk;
    Event event;  // the copy out of it
  };

  std::size_t length(const Message& m, std::size_t off) const {
    return m.bytes - off < chunk_ ? m.bytes - off : chunk_;
  }
  std::byte* take_chunk() {
    if (free_chunks_.empty() && !releasing_.empty() && ctx_.rt.done(releasing_.front().event)) {
      free_chunks_.push_back(releasing_.front().chunk);
      free_events_.push_back(releasing_.front().event);
      releasing_.pop_front();
    }
    if (free_chunks_.empty()) return static_cast<std::byte*>(ctx_.rt.alloc_pinned(chunk_));
    std::byte* c = free_chunks_.back();
    free_chunks_.pop_back();
    return c;
  }
  Event take_event() {
    if (free_events_.empty()) return ctx_.rt.create_event(false);
    Event e = free_events_.back();
    free_events_.pop_back();
    return e;
  }

  LinkContext ctx_;
  std::unique_ptr<Transport> transport_;
  std::size_t chunk_;
  Slots<Message> messages_;
  std::vector<std::byte*> free_chunks_;
  std::deque<Releasing> releasing_;
  std::vector<Event> free_events_;
  std::vector<Event> ready_scratch_;
};

}  // namespace

std::unique_ptr<Link> make_staged_link(LinkContext ctx, std::unique_ptr<Transport> transport,
                                       std::size_t chunk) {
  return std::make_unique<StagedLink>(ctx, std::move(transport), chunk);
}

}  // namespace collscope::device
