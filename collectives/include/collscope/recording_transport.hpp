// A decorator that records, in order, the schedule one rank executes: every send and
// receive posted (peer, bytes, tag), every wait, every reduction and local copy (through
// a reducer decorator it hands to Comm). The time model replays the traces of all ranks
// (collscope/model.hpp). Records only between start() and stop(), so timed calls pay
// one branch per operation.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "collscope/comm.hpp"
#include "collscope/model.hpp"
#include "collscope/reducer.hpp"
#include "collscope/transport.hpp"

namespace collscope {

class RecordingTransport final : public Transport {
 public:
  explicit RecordingTransport(Transport& inner);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  Request isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                Tag tag) override;
  Request irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag) override;
  void wait(Request& req) override;
  void wait_all(std::span<Request> reqs) override;
  void quiesce() override { inner_.quiesce(); }

  // Makes `comm` hand its algorithms a reducer that records into this trace.
  void attach_reducer(Comm& comm);
  // The recording reducer over `chosen` (what attach_reducer installs).
  const Reducer& reducer_over(const Reducer& chosen);

  void start();  // clears the trace and records until stop()
  void stop();
  void reset();  // clears the trace
  bool recording() const { return recording_; }
  const RankTrace& trace() const { return trace_; }
  std::vector<std::uint8_t> serialize() const { return serialize_trace(trace_); }

 private:
  class RecordingReducer final : public Reducer {
   public:
    explicit RecordingReducer(RecordingTransport& owner) : owner_(owner) {}
    void set_inner(const Reducer& inner) { inner_ = &inner; }
    void reduce(void* out, const void* a, const void* b, std::size_t count, DataType t,
                ReduceOp op) const override;
    void divide(void* buf, std::size_t count, DataType t, int divisor) const override;
    void copy(void* dst, const void* src, std::size_t bytes) const override;

   private:
    RecordingTransport& owner_;
    const Reducer* inner_ = &host_reducer();
  };

  void record_wait(const Request& req);

  Transport& inner_;
  RecordingReducer reducer_;
  bool recording_ = false;
  RankTrace trace_;
  std::unordered_map<int, std::uint32_t> pending_;  // transport slot -> posting event
};

// Collective over `ctrl`: every rank's trace, gathered to `root` (MPI_Gatherv of the
// serialised form). Returns the traces on the root, nothing elsewhere.
std::vector<RankTrace> gather_traces(const RecordingTransport& recording, MPI_Comm ctrl,
                                     int root = 0);

}  // namespace collscope
