// The time model: an alpha-beta-gamma cost model per link class, read from a model file,
// and a discrete-event simulator that replays the schedule an algorithm really executed
// (the per-rank traces a RecordingTransport records) and predicts the call's time.
// The parameters are seed 004's (bandwidth, bwurate, link_delay, start_lat, sync_lat)
// plus reduce_rate, the gamma term; collectives/model/MODEL.md documents the file and
// the simulator's rules.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace collscope {

// ---- the model file ------------------------------------------------------------------

// One link class: intra_node (same node, MPI_COMM_TYPE_SHARED) or inter_node.
struct LinkParams {
  double bandwidth = 0;   // bytes/s, one direction of one rank's port
  double bwurate = 1;     // (0, 1]: the share of `bandwidth` a transfer achieves
  double link_delay = 0;  // s per message (alpha)
  double start_lat = 0;   // s, once per call (software start-up)
  double sync_lat = 0;    // s, once per call (the synchronisation around each call)
  double achieved_bandwidth() const { return bandwidth * bwurate; }
};

struct Model {
  LinkParams intra_node;
  LinkParams inter_node;
  double reduce_rate = 0;  // bytes/s of reduced output (gamma = 1 / reduce_rate)
  double copy_rate = 0;    // bytes/s of local copies; 0: copies cost nothing
  std::string source;      // free-form metadata, kept as written (JSON text if not a string)
  std::string fitted_on;
};

// Reads and validates a model file; throws UsageError naming the file and the
// parameter on a missing or unreadable file, bad JSON, an unknown key or link class,
// a missing, negative or non-numeric parameter.
Model load_model(const std::string& path);
// The same from text; `origin` names it in error messages.
Model parse_model(std::string_view json_text, const std::string& origin);

// ---- traces --------------------------------------------------------------------------

enum class TraceOp : std::uint8_t { send, recv, wait, reduce, copy };

struct TraceEvent {
  TraceOp op = TraceOp::send;
  int peer = -1;              // send, recv
  std::uint32_t seq = 0;      // send, recv: the call's sequence number
  std::uint32_t tag = 0;      // send, recv: the call-local tag
  std::uint32_t request = 0;  // wait: the index of the send or recv event it completes
  std::uint64_t bytes = 0;    // send, recv, reduce, copy
};

// What one rank did in one call, in order. A send or recv is named by its index in
// `events`, which is what the builders return and what wait() takes.
struct RankTrace {
  std::vector<TraceEvent> events;

  std::uint32_t send(int peer, std::uint64_t bytes, std::uint32_t tag, std::uint32_t seq = 0);
  std::uint32_t recv(int peer, std::uint64_t bytes, std::uint32_t tag, std::uint32_t seq = 0);
  void wait(std::uint32_t request);
  void reduce(std::uint64_t bytes);
  void copy(std::uint64_t bytes);
};

// A portable byte form (little-endian fields), for gathering traces over MPI.
std::vector<std::uint8_t> serialize_trace(const RankTrace& trace);
RankTrace parse_trace(std::span<const std::uint8_t> bytes);
// Rank r's trace is the r-th piece of `gathered`, `sizes[r]` bytes long (MPI_Gatherv).
std::vector<RankTrace> parse_traces(std::span<const std::uint8_t> gathered,
                                    std::span<const int> sizes);

// ---- the simulator -------------------------------------------------------------------

// When each rank's clock ends, in seconds from the call's start (start_lat included,
// sync_lat not). Throws RuntimeError when the traces cannot complete (a wait on a
// receive no send matches, a wait on something that is not a pending request).
std::vector<double> simulate_ranks(const std::vector<RankTrace>& traces,
                                   const std::vector<int>& node_of_rank, const Model& model);
// The predicted time of the call in seconds: the last rank's clock plus sync_lat.
double simulate(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                const Model& model);
double predict_us(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                  const Model& model);

}  // namespace collscope
