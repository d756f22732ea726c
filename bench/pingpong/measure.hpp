// pingpong's measurements: one pair's round trips, or one step (a round, a shift) of a
// concurrent pattern, on every rank at once, each call the catalogue's schedule of the
// step (runtime/p2p.hpp) run through run_p2p; counted by the executor's Traffic counter,
// the results gathered on rank 0.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collscope/comm.hpp"
#include "collscope/program/stats.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/runtime/p2p.hpp"
#include "collscope/verify/collective_data.hpp"
#include "collscope/volume.hpp"
#include "options.hpp"

namespace collscope::bench::pingpong {

// What rank 0 knows about one (size, pair) once every rank reported.
struct PairResult {
  Pair pair;
  std::vector<double> half_rtt_us;  // per timed iteration, measured on rank a
  program::Stats lat;
  std::uint64_t wrong = 0;           // bytes that arrived changed, both legs
  std::vector<RankVolume> traffic;   // N x N, row r, column p: r's counts with peer p
};

// What one rank brings back from a pair's measurement.
struct LocalResult {
  std::vector<RankVolume> per_peer;  // of the probe round trip
  std::uint64_t wrong = 0;
  std::vector<double> half_rtt_us;
};

// What rank 0 knows about one round or shift once every rank reported.
struct StepResult {
  std::vector<double> times_us;      // rank r's timed call i at [r * iters + i] (0: resting)
  std::vector<std::uint64_t> wrong;  // per rank: bytes of its probe that arrived changed
  std::vector<RankVolume> traffic;   // N x N: the probe call's counts, row r, column p
};

class PingPong {
 public:
  PingPong(PingpongOptions opts, MPI_Comm world);
  ~PingPong();
  PingPong(const PingPong&) = delete;
  PingPong& operator=(const PingPong&) = delete;

  // Collective over every rank: measures the one pair of a step of --pattern pairs,
  // returns the result on rank 0.
  PairResult measure_pair(const P2pStep& step, std::size_t bytes);
  // Collective over every rank: one step of --pattern rounds or ring (a round, a shift),
  // all of its pairs at once; the result on rank 0.
  StepResult measure_step(const P2pStep& step, std::size_t bytes);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  MPI_Comm ctrl() const { return ctrl_; }
  const PingpongOptions& options() const { return opts_; }
  const std::vector<int>& nodes() const { return nodes_; }
  // "exclusive", "mps" or "time_sliced" on device memory, "" on host memory.
  const std::string& gpu_sharing() const { return gpu_sharing_; }

 private:
  LocalResult run_pair(const P2pStep& step, std::size_t bytes);
  double timed_call(Comm& c, const P2pStep& step, const char* phase);
  PairResult collect(Pair p, const LocalResult& local);
  void quiet_barrier(bool watched);
  void maybe_corrupt();
  template <class Call>
  StepResult run_step(Call call, bool takes_part);
  void prepare_payload(std::size_t bytes, std::size_t landing_bytes, int expected_sender);

  Executor& executor() { return backend_->executor(); }

 public:
  // Collective: device buffers replaced since the last time really go (device memory).
  void release_freed_buffers() {
    quiet_barrier(false);
    executor().release_freed_buffers();
  }

 private:
  // The buffers the executor moves: the host vectors, or their device copies.
  std::byte* payload() { return device_ ? device_payload_.get() : pattern_.data(); }
  std::byte* landing() { return device_ ? device_landing_.get() : landing_.data(); }
  void upload();    // pattern_ and landing_ to the device buffers (device memory)
  void download();  // the device landing buffer back into landing_, to be checked

  const P2pEntry& pattern() const { return p2p_entry(opts_.pattern); }  // in the catalogue

  PingpongOptions opts_;
  std::unique_ptr<Backend> backend_;  // its executor counts what it hands to the wire
  MPI_Comm algo_comm_ = MPI_COMM_NULL;  // what Comm carries (unused by point-to-point)
  MPI_Comm ctrl_ = MPI_COMM_NULL;       // barriers and result exchange, never timed
  std::vector<std::unique_ptr<Comm>> comm_with_;  // one per peer: its own tag sequence
  std::unique_ptr<Comm> ring_comm_;               // --pattern ring: every rank, every call
  std::vector<std::byte> pattern_, landing_;
  std::vector<std::byte> expected_;               // what landing_ must hold after a probe
  bool device_ = false;
  verify::Buffer device_payload_, device_landing_;
  int rank_ = 0, nranks_ = 1;
  std::vector<int> nodes_;
  std::string gpu_sharing_;
};

}  // namespace collscope::bench::pingpong
