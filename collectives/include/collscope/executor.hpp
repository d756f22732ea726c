// Executors: how a schedule (schedule.hpp) runs. One schedule, several executors:
//
//   executor  memory      messages                              local ops      a call is complete
//   host      host        a Transport (MPI, UCX): isend/irecv   host reducer   when run() returns
//   cuda      device      host staging, CUDA IPC, CUDA-aware    kernels on     when its stream
//                         MPI                                   the stream     reaches the call's end
//   nccl      device      one ncclGroupStart/End per step       kernels on     (synchronize())
//                         (ncclSend/ncclRecv) on the stream     the stream
//
// The caller gives each executor buffers in its memory space (it made the executor for
// that memory), and times a call as run() + synchronize(): synchronize() returns at
// once on the host and waits for the stream on a device. queue() names the stream, for
// work the caller puts beside a call (a layer's compute). What every executor does around
// its operations (scratch, step reports, counting, buffers, tags) is written once, and
// every executor's messages, replays included, pass through it (executor_sink.hpp;
// device/stream_work.hpp for the two executors on a stream).
//
// Every executor counts the messages it hands to the wire with the same Traffic code,
// at the moment it hands them over: that is the *counted* volume, which must equal the
// schedule's *planned* volume (planned_volume() in algorithm.hpp) and the closed-form
// theory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collscope/schedule.hpp"
#include "collscope/types.hpp"
#include "collscope/volume.hpp"

namespace collscope {

// Bytes a device path copies besides the wire (device executors only): the staged
// path's copies through pinned host memory, the IPC path's copies out of a peer's
// device memory, and what the IPC path reduces straight from a peer's memory instead of
// copying it (consumed_receives.hpp). Their theory follows from the wire's: a staged
// rank copies to the host what it sends and to the device what it receives; an IPC rank
// copies or reduces in place what it receives, the split planned from the schedule.
struct CopyVolume {
  std::uint64_t to_host = 0;            // device -> pinned host (staged sends)
  std::uint64_t to_device = 0;          // pinned host -> device (staged receives)
  std::uint64_t from_peer = 0;          // a peer's device memory -> this rank's (ipc)
  std::uint64_t reduced_from_peer = 0;  // read by a reduce in a peer's memory (ipc)
  bool operator==(const CopyVolume&) const = default;
};

// Bytes and messages per peer, as one rank sends and receives them in one call.
class Traffic {
 public:
  explicit Traffic(int nranks = 0) : per_peer_(static_cast<std::size_t>(nranks)) {}
  void reset();
  // One message handed to the wire: a data message (bytes > 0) or a signal (0 bytes).
  void count(const CommOp& op);
  // Every message of a schedule, walked without running it: its planned volume.
  void count_planned(Steps& steps);
  const std::vector<RankVolume>& per_peer() const { return per_peer_; }
  RankVolume total() const;
  CopyVolume& copies() { return copies_; }
  const CopyVolume& copies() const { return copies_; }

 private:
  std::vector<RankVolume> per_peer_;
  CopyVolume copies_;
};

// What shapes a call's schedule, so that an executor can recognise the same call again
// and replay it (persistent collectives, as MPI-4's MPI_Allreduce_init or a CUDA graph):
// the schedule's maker, this rank's place, and the plan's arguments and aliasing. The
// buffers are not part of it: a replay takes the call's own.
struct CallKey {
  const void* schedule = nullptr;  // what makes the steps: an Algorithm, a function
  int extra = 0;                   // anything else the maker reads (pingpong: the peer)
  std::size_t count = 0, segment_bytes = 0;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  Aliasing aliasing;
  std::span<const std::uint64_t> splits;  // compared by content

  static CallKey of(const void* schedule, const Plan& plan, int extra = 0);
};

// The buffers of one call, in the executor's memory space.
struct CallBuffers {
  const void* send = nullptr;
  void* recv = nullptr;
};

// Where a call's buffer references point: its receive and send buffers and the executor's
// scratch slots. Every executor resolves a schedule's BufRefs through one.
class BufferTable {
 public:
  void set_call(CallBuffers b) {
    recv_ = static_cast<std::byte*>(b.recv);
    // Only an in-place call writes through the send region, and then it is the receive
    // buffer's memory (schedules never write Region::send: StepBuilder refuses it).
    send_ = const_cast<std::byte*>(static_cast<const std::byte*>(b.send));
  }
  void set_scratch(std::size_t slot, std::byte* p) { scratch_[slot] = p; }
  std::byte* address(BufRef ref) const {
    switch (ref.region) {
      case Region::recv: return recv_ + ref.offset;
      case Region::send: return send_ + ref.offset;
      case Region::scratch: return scratch_[ref.slot] + ref.offset;
    }
    return nullptr;
  }

 private:
  std::byte* recv_ = nullptr;
  std::byte* send_ = nullptr;
  std::array<std::byte*, Plan::kMaxScratch> scratch_{};
};

// Where an executor's work goes: nullptr on the host (the calling thread); a
// cudaStream_t for the device executors.
struct Queue {
  void* handle = nullptr;
};

class Executor {
 public:
  explicit Executor(int nranks) : traffic_(nranks) {}
  virtual ~Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  virtual std::string name() const = 0;  // the transport: "mpi", "ucx", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Queue queue() const { return {}; }

  // Runs (or enqueues) one call: every step of `steps`, over `buffers`, with the scratch
  // `plan` declares. `seq` is the call's sequence number (tags of back-to-back calls
  // never match). Counts every message into traffic(). With a key, the executor may
  // keep what it issued, to replay() the same call later.
  virtual void run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
                   const CallKey* key = nullptr) = 0;
  // Runs the call `key` names again, if this executor kept it, over `buffers`; false if
  // it did not (then the caller makes the schedule and runs it). A replay issues the
  // same operations in the same order and counts them the same way.
  virtual bool replay(const CallKey& /*key*/, CallBuffers /*buffers*/, std::uint32_t /*seq*/) {
    return false;
  }
  // Waits until every call run so far is complete (nothing to do on the host).
  virtual void synchronize() {}
  // A local copy in the executor's memory space (vendor baselines use it).
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Buffers freed since the last time may really go: the IPC path keeps what it exported
  // until every peer has unmapped it, which happens here. Collective: every rank calls it
  // between the same calls (the harness after each row; a layer after its pass).
  virtual void release_freed_buffers() {}
  // How device buffers cross ranks ("staged", "ipc", "cuda_aware", "nccl"); "host" for
  // host memory.
  virtual std::string path() const { return "host"; }
  // path() when it is one of the device paths over -t mpi|ucx, else nullopt.
  virtual std::optional<DevicePath> device_path() const { return std::nullopt; }

  Traffic& traffic() { return traffic_; }

 protected:
  Traffic traffic_;
};

}  // namespace collscope
