// The time model: a cost model per link class, read from a model file, and a
// discrete-event simulator that replays each rank's trace of a call (the operations its
// schedule issues, in the executor's order: schedule_trace.hpp) and predicts its time.
// Per link class: wire latency (link_delay), a per-message software overhead charged to
// the rank that posts or completes the message, the port time of a message as a function
// of its size, alone in its direction and with the opposite direction busy, and the
// once-per-call start_lat and sync_lat; per machine: the reducer's and the copy's time as
// a function of size. collectives/model/MODEL.md documents the file (versions 1 and 2),
// the simulator's rules and the fit (scripts/fit-model).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace collscope {

// ---- the model file ------------------------------------------------------------------

// A time as a function of a size, known at a few sizes (the bands of a fit): linear in
// the size between two known sizes, proportional to the size below the first and above
// the last (the end bands' rates). Empty: no curve (the caller falls back to a rate).
struct SizeCurve {
  std::vector<double> bytes;    // strictly increasing, > 0
  std::vector<double> seconds;  // >= 0, one per entry of `bytes`
  bool empty() const { return bytes.empty(); }
  double seconds_for(double size) const;
  // `size` bytes that are part of `footprint` bytes streamed in one call: no faster than
  // the footprint's own rate (a large call's pieces run at the rate of the cache level
  // the whole call lives in), and no faster than `size` alone.
  double seconds_within(double size, double footprint) const;
};

// Who moves a message's bytes: a network or DMA engine while both ranks compute, or the
// receiving rank's CPU (shared memory's single copy, TCP), which cannot reduce or copy
// at the same time: a message into a rank makes no progress while that rank computes.
enum class MovedBy : std::uint8_t { network, receiver };

// What a message between two nodes queues on. per_rank: each rank's own egress and
// ingress port (a NIC per rank, as on GPU nodes), so a rank's concurrent messages take
// turns and two ranks of a node do not meet. per_node_pair: one link per ordered pair of
// nodes, shared by every rank of the two (a host-to-host link shaped on its own, as the
// emulated cluster has), so a rank sending to three nodes at once uses three links and
// two ranks of a node sending to one node take turns. Only inter_node may have it.
enum class Links : std::uint8_t { per_rank, per_node_pair };

// One link class: intra_node (same node, MPI_COMM_TYPE_SHARED) or inter_node. The first
// five members are the version-1 file's; a version-2 file fills the others too.
struct LinkParams {
  double bandwidth = 0;   // bytes/s, one direction of one rank's port
  double bwurate = 1;     // (0, 1]: the share of `bandwidth` a transfer achieves
  double link_delay = 0;  // s per message on the wire (alpha, LogP's L)
  double start_lat = 0;   // s, once per call (software start-up)
  double sync_lat = 0;    // s, once per call (the synchronisation around each call)
  double overhead = 0;    // s per message on a rank's clock (LogP's o): the sender pays it
                          // when it posts a send, the receiver when a receive completes
  SizeCurve one_way{};    // port time of a message alone in its direction; empty: bytes /
                          // achieved_bandwidth()
  SizeCurve both_ways{};  // port time while the opposite direction is busy; empty: one_way
  // The same two for a message whose bytes are the caller's input, unchanged in the call
  // (TraceEvent::from_input); the two above are then for bytes the sender wrote earlier
  // in the call. Empty: the message costs what written bytes cost.
  SizeCurve one_way_input{};
  SizeCurve both_ways_input{};
  MovedBy moved_by = MovedBy::network;
  Links links = Links::per_rank;
  double achieved_bandwidth() const { return bandwidth * bwurate; }
  // Seconds a message of `bytes` holds the sender's egress and receiver's ingress port,
  // within a call whose ranks at either end move `footprint` bytes (0: the message alone),
  // its bytes being the caller's input or written earlier in the call.
  double port_seconds(double bytes, bool opposite_busy, double footprint = 0,
                      bool from_input = false) const;
};

struct Model {
  LinkParams intra_node;
  LinkParams inter_node;
  double reduce_rate = 0;  // bytes/s of reduced output (gamma = 1 / reduce_rate); version
                           // 2: the largest band's rate
  double copy_rate = 0;    // bytes/s of local copies; 0: copies cost nothing
  std::string source;      // free-form metadata, kept as written (JSON text if not a string)
  std::string fitted_on;
  int version = 1;         // of the file it was read from
  SizeCurve reduce_curve{};  // version 2: seconds per reduction of a size; empty: the rate
  SizeCurve copy_curve{};    // version 2: seconds per local copy of a size; empty: the rate
  double reduce_seconds(double bytes, double footprint = 0) const;
  double copy_seconds(double bytes, double footprint = 0) const;
};

// Reads and validates a model file (version 1 or 2); throws UsageError naming the file
// and the parameter on a missing or unreadable file, bad JSON, an unknown version, key or
// link class, a missing, negative or non-numeric parameter, bands out of order.
Model load_model(const std::string& path);
// The same from text; `origin` names it in error messages.
Model parse_model(std::string_view json_text, const std::string& origin);

// ---- traces --------------------------------------------------------------------------

enum class TraceOp : std::uint8_t { send, recv, wait, reduce, copy };

// Built with designated initializers ({.op = TraceOp::send, .peer = 1, ...}): the members
// are in the order that packs them into 32 bytes (a call at N = 4096 holds millions).
struct TraceEvent {
  TraceOp op = TraceOp::send;
  // send: its bytes are the caller's input, not written by this rank earlier in the call
  // (neither received nor the output of a reduction or copy). On shared memory the two
  // sit in different places in the caches (MODEL.md, "Where the bytes sit").
  bool from_input = false;
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

  std::uint32_t send(int peer, std::uint64_t bytes, std::uint32_t tag, std::uint32_t seq = 0,
                     bool from_input = false);
  std::uint32_t recv(int peer, std::uint64_t bytes, std::uint32_t tag, std::uint32_t seq = 0);
  void wait(std::uint32_t request);
  void reduce(std::uint64_t bytes);
  void copy(std::uint64_t bytes);
};

// What a trace moves: bytes and messages sent and received, bytes reduced and copied.
struct TraceTotals {
  std::uint64_t sent_bytes = 0, sent_msgs = 0, recv_bytes = 0, recv_msgs = 0;
  std::uint64_t reduced_bytes = 0, copied_bytes = 0;
  std::uint64_t events = 0;
  void add(const TraceEvent& e) {
    ++events;
    switch (e.op) {
      case TraceOp::send: sent_bytes += e.bytes; ++sent_msgs; break;
      case TraceOp::recv: recv_bytes += e.bytes; ++recv_msgs; break;
      case TraceOp::reduce: reduced_bytes += e.bytes; break;
      case TraceOp::copy: copied_bytes += e.bytes; break;
      case TraceOp::wait: break;
    }
  }
  bool operator==(const TraceTotals&) const = default;
  // The most the rank sends, receives, reduces or copies in the call (the simulator's
  // footprint: a call's pieces stream from the memory level the whole call lives in).
  double footprint() const;
};
TraceTotals totals_of(const RankTrace& trace);

// A rank's events, handed to the simulator in order, a batch at a time, so that a call
// of thousands of ranks never holds whole traces. Events are numbered from 0 in the
// order they are handed out; a wait names the send or receive it completes by that
// number, as in RankTrace.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Appends the next events (at least one) to `out`, or returns false at the end.
  virtual bool fill(std::vector<TraceEvent>& out) = 0;
};

// One rank for the simulator: its events, and the footprint of its whole trace
// (TraceTotals::footprint), which the rates of its first events already depend on.
struct RankStream {
  EventSource* events = nullptr;  // not owned
  double footprint = 0;
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
// The same, reading each rank's events as it needs them. With `threads` 2, a second
// thread computes them ahead while the first simulates (the same events in the same
// order, so the same figures; each EventSource is then read from that thread).
std::vector<double> simulate_ranks(const std::vector<RankStream>& ranks,
                                   const std::vector<int>& node_of_rank, const Model& model,
                                   int threads = 1);
// The predicted time of the call in seconds: the last rank's clock plus sync_lat.
double simulate(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                const Model& model);
double predict_us(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                  const Model& model);
double predict_us(const std::vector<RankStream>& ranks, const std::vector<int>& node_of_rank,
                  const Model& model, int threads = 1);

}  // namespace collscope
