// Point-to-point transport inside one communicator: the only way algorithms move bytes.
//
// Non-blocking send and receive return a Request that must be waited on exactly once.
// The tag an algorithm passes is local to one collective call (phase, tree, chunk
// class); the transport combines it with the call's sequence number (see Tag) so that
// back-to-back collectives can never match each other's messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "collscope/types.hpp"

namespace collscope {

// A call-local tag (0..kMaxLocalTag) plus the sequence number of the collective call.
struct Tag {
  static constexpr std::uint32_t kMaxLocalTag = 255;
  std::uint32_t seq = 0;
  std::uint32_t local = 0;
};

struct Request {
  int slot = -1;  // transport-owned handle; -1 = nothing to wait for
  bool pending() const { return slot >= 0; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  // Why this transport cannot take device pointers, or "" when it can (a CUDA-aware
  // library, detected at run time). A device buffer it cannot take is a UsageError.
  virtual std::string device_memory_refusal() const {
    return name() + " cannot take device buffers";
  }

  // `mem` says where the buffer lives, so a transport never has to guess.
  virtual Request isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                        Tag tag) = 0;
  virtual Request irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem,
                        Tag tag) = 0;
  // Completes the request and resets it to "nothing to wait for".
  virtual void wait(Request& req) = 0;
  // Completes the request if it is done (then as wait() does) and says whether it was;
  // never blocks. A request that is not pending is done.
  virtual bool test(Request& req) = 0;
  virtual void wait_all(std::span<Request> reqs) {
    for (Request& r : reqs) wait(r);
  }
  // Called at the end of every collective call, once all its requests are complete.
  // A transport whose completed sends may still need this process's progress to be
  // delivered (UCX: data queued while an endpoint wires up, or behind a full FIFO)
  // pushes them out here, so a rank that goes quiet after a call strands nothing.
  virtual void quiesce() {}
};

}  // namespace collscope
