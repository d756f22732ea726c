// Comm: everything an algorithm needs (transport, reducer, scratch, the call's tags),
// and CollArgs: what one collective call is asked to do.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "collscope/progress.hpp"
#include "collscope/reducer.hpp"
#include "collscope/transport.hpp"
#include "collscope/types.hpp"

namespace collscope {

inline constexpr std::size_t kDefaultSegmentBytes = std::size_t{1} << 20;
inline constexpr std::size_t kDefaultScratchLimit = std::size_t{8} << 30;

struct CollArgs {
  const void* sendbuf = nullptr;  // equal to recvbuf for an in-place call
  void* recvbuf = nullptr;
  std::size_t count = 0;          // elements (allreduce: the length of the vector)
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  MemoryKind mem = MemoryKind::host;
  std::size_t segment_bytes = kDefaultSegmentBytes;  // chunk of pipelined algorithms
  std::size_t scratch_limit = kDefaultScratchLimit;  // per rank, checked before a run
  // all-to-all-v only: the N x N split matrix in elements, row = sender (collective.hpp).
  std::span<const std::uint64_t> splits;

  // sendbuf == recvbuf. Collectives whose in-place buffer sits inside the other one
  // (allgather, reduce_scatter, gather, scatter) compare the addresses themselves.
  bool in_place() const { return sendbuf == recvbuf; }
  std::size_t elem_size() const { return dtype_size(dtype); }
  std::size_t bytes() const { return count * elem_size(); }
};

class Comm {
 public:
  // `mpi_comm` is used only by the vendor baselines (MPI_Allreduce, ...).
  Comm(Transport& transport, MPI_Comm mpi_comm);

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  Transport& transport() { return transport_; }
  MPI_Comm mpi_comm() const { return mpi_comm_; }

  // Starts a collective call: a fresh sequence number for its tags, the memory kind of
  // its buffers (and so its reducer), the names the watchdog reports.
  void begin_call(const char* collective, const char* algorithm, MemoryKind mem);
  void end_call();
  std::uint32_t seq() const { return seq_; }
  const Reducer& reducer() const { return *reducer_; }
  // A decorator around the reducer begin_call chooses (the time model records each
  // call's reductions this way: collscope/recording_transport.hpp). Empty: none.
  using ReducerWrapper = std::function<const Reducer&(const Reducer&)>;
  void set_reducer_wrapper(ReducerWrapper wrap) { wrap_reducer_ = std::move(wrap); }
  MemoryKind memory() const { return mem_; }

  // Point-to-point inside the current call. A zero-byte message is never sent: both
  // sides know its size, so both skip it (the theory counts messages the same way).
  Request isend(int peer, const void* buf, std::size_t bytes, std::uint32_t local_tag);
  Request irecv(int peer, void* buf, std::size_t bytes, std::uint32_t local_tag);
  // Signal/wait: a zero-byte notification, the one message that is sent empty (barriers,
  // pipeline hand-offs). The theory counts it as a message of 0 bytes (RankVolume::signal).
  Request signal(int peer, std::uint32_t local_tag);
  Request expect_signal(int peer, std::uint32_t local_tag);
  void wait(Request& req) { transport_.wait(req); }
  void wait_all(std::span<Request> reqs) { transport_.wait_all(reqs); }

  // Reusable scratch of the call's memory kind; slot s keeps its buffer between calls.
  void* scratch(int slot, std::size_t bytes);

  // For the watchdog: the phase and step the algorithm is in.
  void step(const char* phase, int k) {
    progress().phase.store(phase, std::memory_order_relaxed);
    progress().step.store(k, std::memory_order_relaxed);
  }

 private:
  Transport& transport_;
  MPI_Comm mpi_comm_;
  const Reducer* reducer_;
  ReducerWrapper wrap_reducer_;
  MemoryKind mem_ = MemoryKind::host;
  std::uint32_t seq_ = 0;
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace collscope
