// Transport over MPI point-to-point (MPI_Isend / MPI_Irecv) on a private duplicate of
// the communicator it is given, so its messages never meet anybody else's.
#pragma once

#include <mpi.h>

#include <vector>

#include "collscope/transport.hpp"

namespace collscope {

// Whether this MPI library takes device pointers: "yes", "no", or "unknown" when it has no
// way to say (no MPIX_Query_cuda_support). Asked at run time (Open MPI's extension), never
// assumed from the build.
std::string mpi_cuda_aware();

// Why this MPI library cannot take device pointers, or "" when it can (mpi_cuda_aware()).
std::string mpi_device_memory_refusal();

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  Request isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                Tag tag) override;
  Request irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag) override;
  void wait(Request& req) override;
  bool test(Request& req) override;
  std::string device_memory_refusal() const override { return device_refusal_; }
  // Requests still open (posted and not yet waited on); 0 between calls.
  int open_requests() const;

 private:
  struct Slot {
    MPI_Request req = MPI_REQUEST_NULL;
    int peer = -1;
    bool is_recv = false;
    std::size_t bytes = 0;
  };
  int mpi_tag(Tag tag) const;
  Request start(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag, bool is_recv);
  Request post(Slot slot);
  void finish(Request& req, const MPI_Status& status);
  void check_peer(int peer, std::size_t bytes, MemoryKind mem) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::uint32_t seq_modulus_ = 1;
  std::string device_refusal_;  // "" where the library is CUDA-aware
  std::vector<Slot> slots_;
  std::vector<int> free_;
};

}  // namespace collscope
