// The paths of the device executor (device_executor.hpp): how one schedule message
// crosses from a rank's device memory to a peer's. Internal to the library.
//
// A link posts a receive or a send and returns a handle, which wait() completes (the
// sequencer waits each exactly once). A receive is complete when its bytes are in
// device memory or enqueued on the stream to get there (work the stream orders before
// anything enqueued later); a send is complete when its source may be overwritten by
// work enqueued after. A signal (a CommOp with no buffer) is a message of no bytes.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collscope/device/device_executor.hpp"
#include "collscope/device/runtime.hpp"
#include "collscope/executor.hpp"
#include "collscope/transport.hpp"

namespace collscope::device {

// What every link works with: the runtime, the executor's stream, the copy counters,
// and whether work is enqueued on the stream that has not been waited for.
struct LinkContext {
  Runtime& rt;
  Stream stream;
  CopyVolume& copies;
  bool& stream_busy;
};

class Link {
 public:
  virtual ~Link() = default;
  // `at` is the message's device address (nullptr for a signal). A receive posted
  // `consumed` (consumed_receives.hpp) may be left in the sender's memory at wait(), for
  // the reduce that consumes it to read there (consumed_source()).
  virtual int post_recv(const CommOp& op, std::byte* at, Tag tag, bool consumed) = 0;
  virtual int post_send(const CommOp& op, const std::byte* at, Tag tag) = 0;
  virtual void wait(int handle) = 0;
  // A consumed receive into `at` that wait() left in its sender's memory: where its bytes
  // are; nullptr when they were copied to `at` (or no such receive is pending).
  virtual const std::byte* consumed_source(const std::byte* /*at*/) { return nullptr; }
  // The reduce reading consumed_source(at) is enqueued: the sender's bytes may go.
  virtual void consumed(const std::byte* /*at*/) {}
  virtual void begin_call() {}
  // Every message of the call has been waited for.
  virtual void end_call() {}
  // The stream has been drained (everything enqueued so far is done).
  virtual void stream_drained() {}
  // Collective: buffers freed since the last time may be released (the ipc path unmaps
  // them on every peer first).
  virtual void release_freed_buffers() {}
  // The stream has not drained for a while: say in progress() what it waits for, if
  // the link knows (the ipc path: the first flag a peer has not set).
  virtual void explain_stall() {}
  // Peers' buffers mapped now (the ipc path's registration cache; flag pages not counted).
  virtual std::size_t mapped_peer_buffers() const { return 0; }
};

std::unique_ptr<Link> make_cuda_aware_link(LinkContext ctx, std::unique_ptr<Transport> transport);
std::unique_ptr<Link> make_staged_link(LinkContext ctx, std::unique_ptr<Transport> transport,
                                       std::size_t chunk);

// `control` carries each message's address; `comm` (collective at construction,
// release_freed_buffers() and destruction) exchanges the flag pages' handles.
std::unique_ptr<Link> make_ipc_link(LinkContext ctx, std::unique_ptr<Transport> control,
                                    MPI_Comm comm, const DeviceOptions& options);

// Completes `r`, polling as wait_policy() says (block: the transport's own wait), with
// progress() naming the peer meanwhile.
void wait_request(Transport& t, Request& r, int peer, bool is_recv);

// A pool of handles' slots: take() returns a free index, give() returns it.
template <class Slot>
class Slots {
 public:
  int take() {
    if (free_.empty()) {
      slots_.push_back(std::make_unique<Slot>());
      return static_cast<int>(slots_.size() - 1);
    }
    const int i = free_.back();
    free_.pop_back();
    *slots_[static_cast<std::size_t>(i)] = Slot{};
    return i;
  }
  void give(int i) { free_.push_back(i); }
  Slot& operator[](int i) { return *slots_[static_cast<std::size_t>(i)]; }

 private:
  std::vector<std::unique_ptr<Slot>> slots_;  // stable addresses: MPI writes into them
  std::vector<int> free_;
};

}  // namespace collscope::device
