// Transport over UCX's tagged messages (UCP). One context and one worker per process,
// worker addresses exchanged over MPI, one endpoint per peer.
//
// Tag layout (64 bits, matched with a full mask, so a receive names its source):
//   bits 63..40  source rank      (24 bits: up to 16M ranks)
//   bits 39..16  call sequence    (24 bits, wraps after 16M calls)
//   bits 15..0   call-local tag
// Every request is completed by wait() and freed there exactly once; requests() counts
// those posted and not yet freed. The destructor closes every endpoint with a flush,
// then the worker and the context, in that order.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "collscope/transport.hpp"

namespace collscope {

// The memory types the UCX context of this process supports, as UCX names them
// ("host,cuda,cuda_managed"): set when a UcxTransport is made, "" before.
std::string ucx_context_memory_types();

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(MPI_Comm comm);  // collective over comm
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "ucx"; }
  Request isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                Tag tag) override;
  Request irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag) override;
  void wait(Request& req) override;
  bool test(Request& req) override;
  void quiesce() override;  // ucp_worker_flush: every completed send delivered
  std::string device_memory_refusal() const override { return device_refusal_; }

  // Requests posted and not yet completed and freed; 0 between calls.
  int open_requests() const;
  // UCX requests handed out by the library and not yet released (ucp_request_free).
  long live_ucx_requests() const { return ucx_requests_live_; }

 private:
  struct Slot {
    void* ucx_req = nullptr;  // nullptr: completed at once
    int peer = -1;
    bool is_recv = false;
    std::size_t bytes = 0;
    std::size_t received = 0;  // a receive's length, once complete
  };
  std::uint64_t ucx_tag(int source, Tag tag) const;
  int new_slot();
  void check_args(int peer, MemoryKind mem) const;
  void close_endpoints();
  void wire_up();
  void progress_until_all_ranks_done(std::vector<void*>& reqs);
  void finish(Request& req);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  struct Handles;  // the UCX handles, kept out of this header
  Handles* h_ = nullptr;
  std::deque<Slot> slots_;
  std::vector<int> free_;
  long ucx_requests_live_ = 0;
  std::string device_refusal_;  // "" where the context supports CUDA memory
};

// The UCX settings that shape a run (UCX_TLS, UCX_NET_DEVICES, ...), "NAME=value" each,
// for the run's metadata.
std::vector<std::string> ucx_environment();

}  // namespace collscope
