// pingpong: latency and bandwidth between two ranks (--pairs A,B, default 0,1) or between
// every pair (--pairs all, N x N matrices), so a slow link or a slow rank stands out.
//
//   rank a                          rank b
//     | ---- ping: `bytes` ---->      |      latency   = round trip / 2, timed on rank a
//     | <--- pong: the same bytes --  |      bandwidth = bytes / latency (GB = 1e9 B)
//
// Per (size, pair): one untimed probe round trip, whose traffic is counted and compared
// with theory (always) and whose payload is compared bit for bit (-c 1); then -w warmup
// and -n timed round trips, back to back. Every round trip is one Comm call (a fresh tag
// sequence). Each rank keeps one Comm per peer, so a pair's sequence numbers stay in step
// while other pairs run. A 0-byte size is a signal each way: one message of 0 bytes, as
// the executor counts it.
// Ranks outside the pair wait in a barrier that sleeps (MPI_Ibarrier + MPI_Test), so they
// take no CPU from the measurement on an oversubscribed node.
//
// --pairs all measures every a < b in turn; both directions are the same round trip, so
// [a][b] = [b][a]; the diagonal is 0, "not measured (self)". Its record per size holds the
// matrices; time_us, time_us_min, time_us_max are the median, min and max over the pairs
// of each pair's median; sent/recv bytes add up the probes of all pairs.
//
// --pattern rounds|ring load many links at once, so that a link is seen under load as well
// as alone (every pair is still reported, N x N):
//   rounds  a round-robin tournament (the circle method): N-1 rounds (N odd: N, one rank
//           resting in each) of disjoint pairs covering every rank; all pairs of a round
//           do their round trips at the same time. Every pair meets once; [a][b] = [b][a]
//           is its median half round trip, as in --pairs all.
//   ring    shift k = 1 .. N-1: every rank sends the message to r+k and receives one from
//           r-k in one call, all ranks at once, so every link direction carries one
//           message. Each rank times its call; [r][r+k] is the median time of the call of
//           r+k, the link's receiver: one way, not half a round trip, and not symmetric
//           (a send completes when the transport has taken its bytes, so the sender's
//           time says little about the link).
// Each round or shift is one schedule call per rank, counted by the executor's Traffic
// counter and compared cell by cell with its exact N x N volume; every call starts after
// a barrier. Payloads depend on (size, sender), so a message from the wrong rank fails
// the check. The record says which pattern in `algorithm` (pingpong, rounds, ring).
// Device memory (-m device, --path, -t nccl): the payload and landing buffers live on the
// GPU, are filled and read back outside the timed calls, and a call ends when its stream
// has. Limits: no bidirectional streaming.
#include <CLI/CLI.hpp>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/bench/options.hpp"
#include "collscope/program/faults.hpp"
#include "collscope/program/json_lines.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/node_map.hpp"
#include "collscope/program/quiet_barrier.hpp"
#include "collscope/program/rows.hpp"
#include "collscope/program/stats.hpp"
#include "collscope/program/text.hpp"
#include "collscope/program/watchdog.hpp"
#include "collscope/program/spread_fields.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/runtime/gpu_sharing.hpp"
#include "collscope/patterns/tournament.hpp"
#include "collscope/theory.hpp"
#include "collscope/comm.hpp"
#include "collscope/enum_names.hpp"
#include "collscope/errors.hpp"
#include "collscope/progress.hpp"
#include "collscope/results/results_file.hpp"
#include "collscope/splitmix.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/verify/collective_data.hpp"
#include "collscope/volume.hpp"

namespace collscope::bench {
namespace {

using program::fmt;
using program::gbps;
using program::parse_command_line;
using program::Stats;
using program::stats_of;
using program::Watchdog;
using program::WatchedSection;

constexpr const char* kProgram = "pingpong";

using Pair = patterns::RankPair;  // a < b once checked

// ---- command line --------------------------------------------------------------------

// pairs: one pair at a time (--pairs); rounds, ring: many pairs at once (every pair).
enum class Pattern { pairs, rounds, ring };

struct PingpongOptions {
  Options common;  // sizes, iterations, check, transport, output, timeout
  bool all_pairs = false;
  Pair pair;
  Pattern pattern = Pattern::pairs;
};

constexpr std::string_view kPatternNames[] = {"pairs", "rounds", "ring"};  // enum order

std::string_view pattern_name(Pattern p) { return name_of(p, kPatternNames); }

// --pattern: rounds and ring measure every pair, so --pairs may only be all (or absent).
void parse_pattern(const std::string& text, bool pairs_given, PingpongOptions& p) {
  const std::optional<Pattern> pattern = by_name<Pattern>(text, kPatternNames);
  if (!pattern) throw UsageError("bad --pattern '" + text + "' (expected pairs, rounds or ring)");
  p.pattern = *pattern;
  if (p.pattern == Pattern::pairs) return;
  if (pairs_given && !p.all_pairs)
    throw UsageError("--pattern " + text + " measures every pair: --pairs must be all or left out");
  p.all_pairs = true;
}

std::optional<int> parse_rank(const std::string& text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoi(text);
}

void parse_pairs(const std::string& text, PingpongOptions& p) {
  if (text == "all") {
    p.all_pairs = true;
    return;
  }
  const std::size_t comma = text.find(',');
  const auto a = parse_rank(text.substr(0, comma));
  const auto b = comma == std::string::npos ? std::nullopt : parse_rank(text.substr(comma + 1));
  if (!a || !b)
    throw UsageError("bad --pairs '" + text + "' (expected all, or two ranks A,B such as 0,1)");
  p.pair = {*a, *b};
}

PingpongOptions parse_pingpong_options(int argc, const char* const* argv) {
  PingpongOptions p;
  Options& o = p.common;
  CLI::App app{"collscope pingpong: latency and bandwidth between two ranks, or every pair",
               kProgram};
  std::string pairs = "0,1", pattern = "pairs";
  SweepText sweep;
  add_sweep_options(app, {"0, 8, 1K, 16M, 1G", "round trips per size and pair",
                          "compare the payload bit for bit (0 or 1); byte counts are always checked"},
                    sweep, o);
  DeviceText device;
  ChoiceText text;
  app.add_option("-t,--transport", text.transport, "mpi, ucx or nccl (GPU memory)");
  app.add_option("-m,--memory", device.memory, "host or device (every rank's buffers on its GPU)");
  app.add_option("--path", text.path, "device memory: cuda_aware, staged or ipc");
  add_device_flags(app, device, o.fuse);
  CLI::Option* pairs_option = app.add_option("--pairs", pairs, "two ranks A,B (default 0,1), or all");
  app.add_option("--pattern", pattern,
                 "pairs (one pair at a time), rounds (disjoint pairs at once) or ring (r -> r+k at once)");
  add_output_flags(app, {"JSON lines", "the results", "a round trip"}, text.format, o.json_path,
                   o.output_path, o.timeout_s);
  app.set_help_flag("-h,--help", "print this help and exit");
  if (!parse_command_line(app, argc, argv, o.help_text)) {
    o.show_help = true;
    return p;
  }
  apply_sweep_options(sweep, o);
  parse_pairs(pairs, p);
  parse_pattern(pattern, pairs_option->count() > 0, p);
  read_device_flags(app, device, o);
  apply_common_options(text, o);
  return p;
}

// Needs the number of ranks, nothing else: identical on every rank, before any message.
void check_pairs(const PingpongOptions& p, int nranks) {
  if (nranks < 2)
    throw UsageError("pingpong needs at least 2 ranks, got " + std::to_string(nranks));
  if (p.all_pairs) return;
  const auto [a, b] = p.pair;
  if (a == b)
    throw UsageError("--pairs " + std::to_string(a) + "," + std::to_string(b) +
                     ": the two ranks must differ");
  for (int r : {a, b})
    if (r >= nranks)
      throw UsageError("--pairs " + std::to_string(a) + "," + std::to_string(b) + ": rank " +
                       std::to_string(r) + " is out of range for " + std::to_string(nranks) +
                       " ranks");
}

std::vector<Pair> pairs_to_measure(const PingpongOptions& p, int nranks) {
  if (!p.all_pairs) return {p.pair};
  std::vector<Pair> out;
  for (int a = 0; a < nranks; ++a)
    for (int b = a + 1; b < nranks; ++b) out.push_back({a, b});
  return out;
}

// ---- small helpers -------------------------------------------------------------------

// The payload of a size: a function of (size, byte index) only, so both ranks know it.
void fill_pattern(std::vector<std::byte>& buf) {
  const std::uint64_t seed = splitmix64(buf.size());
  for (std::size_t i = 0; i < buf.size(); i += 8) {
    const std::uint64_t word = splitmix64(seed ^ i);
    std::memcpy(buf.data() + i, &word, std::min<std::size_t>(8, buf.size() - i));
  }
}

std::uint64_t bytes_differing(const std::vector<std::byte>& got, const std::vector<std::byte>& want) {
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return 0;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != want[i];
  return wrong;
}

// ---- one pair's measurement ----------------------------------------------------------

// What rank 0 knows about one (size, pair) once every rank reported.
struct PairResult {
  Pair pair;
  std::vector<double> half_rtt_us;  // per timed iteration, measured on rank a
  Stats lat;
  std::uint64_t wrong = 0;           // bytes that arrived changed, both legs
  std::vector<RankVolume> traffic;   // N x N, row r, column p: r's counts with peer p
};

// What one rank brings back from a pair's measurement.
struct LocalResult {
  std::vector<RankVolume> per_peer;  // of the probe round trip
  std::uint64_t wrong = 0;
  std::vector<double> half_rtt_us;
};

struct StepResult;  // one round or shift of a concurrent pattern (below)

class PingPong {
 public:
  PingPong(PingpongOptions opts, MPI_Comm world);
  ~PingPong();
  PingPong(const PingPong&) = delete;
  PingPong& operator=(const PingPong&) = delete;

  // Collective over every rank: measures one pair, returns the result on rank 0.
  PairResult measure(Pair p, std::size_t bytes);
  // Collective over every rank: one round of --pattern rounds, or shift k of --pattern
  // ring, all of its pairs at once; the result on rank 0.
  StepResult measure_round(const std::vector<Pair>& round, std::size_t bytes);
  StepResult measure_shift(int k, std::size_t bytes);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  MPI_Comm ctrl() const { return ctrl_; }
  const PingpongOptions& options() const { return opts_; }
  const std::vector<int>& nodes() const { return nodes_; }
  // "exclusive", "mps" or "time_sliced" on device memory, "" on host memory.
  const std::string& gpu_sharing() const { return gpu_sharing_; }

 private:
  LocalResult run_pair(Pair p, std::size_t bytes);
  double round_trip(Comm& c, bool initiator, int peer, const char* phase);
  double timed_run(Comm& c, Plan& plan, Steps& steps, const char* algorithm);
  PairResult collect(Pair p, const LocalResult& local);
  void quiet_barrier(bool watched);
  void maybe_corrupt();
  template <class Call>
  StepResult run_step(Call call, bool takes_part);
  double ring_call(int to, int from, const char* phase);
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

PingPong::PingPong(PingpongOptions opts, MPI_Comm world)
    : opts_(std::move(opts)), device_(opts_.common.memory == MemoryKind::device) {
  MPI_Comm_dup(world, &algo_comm_);
  MPI_Comm_dup(world, &ctrl_);
  MPI_Comm_rank(ctrl_, &rank_);
  MPI_Comm_size(ctrl_, &nranks_);
  nodes_ = program::node_of_rank(ctrl_);
  backend_ = make_backend(backend_spec(opts_.common), world, nodes_);
  if (const auto sharing = gpu_sharing_of(backend_->gpu(), ctrl_))
    gpu_sharing_ = std::string(gpu_sharing_name(sharing->job));
  for (int peer = 0; peer < nranks_; ++peer)
    comm_with_.push_back(std::make_unique<Comm>(executor(), algo_comm_));
  ring_comm_ = std::make_unique<Comm>(executor(), algo_comm_);
}

void PingPong::upload() {
  if (!device_) return;
  device_payload_ = verify::alloc(MemoryKind::device, pattern_.size());
  device_landing_ = verify::alloc(MemoryKind::device, landing_.size());
  verify::copy_to_device(device_payload_.get(), pattern_.data(), pattern_.size());
  verify::copy_to_device(device_landing_.get(), landing_.data(), landing_.size());
}

void PingPong::download() {
  if (device_) verify::copy_to_host(landing_.data(), device_landing_.get(), landing_.size());
}

PingPong::~PingPong() {
  comm_with_.clear();
  ring_comm_.reset();
  MPI_Comm_free(&algo_comm_);
  MPI_Comm_free(&ctrl_);
}

// A barrier that sleeps while it waits: ranks left out of a pair take no CPU from it.
// Ranks outside the pair are not watched: they wait for a whole measurement, not a call.
void PingPong::quiet_barrier(bool watched) {
  std::optional<WatchedSection> watch;
  if (watched) watch.emplace("barrier");
  program::quiet_barrier(ctrl_, std::chrono::microseconds(50));
}

// Fault injection for the check's test: COLLSCOPE_DEBUG_CORRUPT=rank flips one bit of
// what that rank received in each probe, as a broken link would.
void PingPong::maybe_corrupt() {
  const char* env = std::getenv("COLLSCOPE_DEBUG_CORRUPT");
  if (env && !landing_.empty() && std::atoi(env) == rank_) landing_[0] ^= std::byte{1};
}

// One round trip as a schedule over the payload (the send buffer) and the landing
// buffer (the receive buffer). Step 0: a sends the ping, b receives it; step 1: b sends
// it back from where it landed, a receives the pong. A 0-byte size is a signal each way.
// The steps carry the measurement's phase (probe, warmup, timed) for the watchdog.
Steps round_trip_steps(Plan& p, bool initiator, int peer, const char* phase) {
  const std::uint32_t ping = p.tag(), pong = p.tag();
  const std::size_t bytes = p.count();
  StepBuilder s(p);
  auto send = [&](BufRef from, std::uint32_t tag) -> StepBuilder& {
    return bytes > 0 ? s.send(peer, from, bytes, tag) : s.signal(peer, tag);
  };
  auto recv = [&](std::uint32_t tag) -> StepBuilder& {
    return bytes > 0 ? s.recv(peer, Plan::recv(), bytes, tag) : s.wait_signal(peer, tag);
  };
  co_yield (initiator ? send(Plan::send(), ping) : recv(ping)).step(phase, 0);
  co_yield (initiator ? recv(pong) : send(Plan::recv(), pong)).step(phase, 1);
}

// One call of `steps` over the payload and the landing buffer, watched as `algorithm`;
// returns its time in microseconds. The schedule is set up before the clock starts, and
// the clock runs over executor().run only.
double PingPong::timed_run(Comm& c, Plan& plan, Steps& steps, const char* algorithm) {
  begin_call(progress(), "pingpong", algorithm);
  const std::uint32_t seq = c.next_seq();
  const auto t0 = std::chrono::steady_clock::now();
  executor().run(plan, steps, {payload(), landing()}, seq);
  executor().synchronize();  // a device call is done when its stream is
  const auto t1 = std::chrono::steady_clock::now();
  end_call(progress());
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// The plan of one call that moves the payload: bytes as uint8 elements.
Plan payload_plan(int rank, int nranks, std::size_t bytes) {
  CollArgs args;
  args.count = bytes;
  args.dtype = DataType::uint8;
  return Plan(rank, nranks, args, {});
}

// One round trip as one watched call; returns half its time in microseconds.
double PingPong::round_trip(Comm& c, bool initiator, int peer, const char* phase) {
  Plan plan = payload_plan(rank_, nranks_, pattern_.size());
  Steps steps = round_trip_steps(plan, initiator, peer, phase);
  return timed_run(c, plan, steps, "pingpong") / 2;
}

LocalResult PingPong::run_pair(Pair p, std::size_t bytes) {
  const bool initiator = rank_ == p.a;
  const int peer = initiator ? p.b : p.a;
  Comm& c = *comm_with_[static_cast<std::size_t>(peer)];
  pattern_.assign(bytes, std::byte{0});
  fill_pattern(pattern_);
  landing_.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) landing_[i] = ~pattern_[i];  // nothing passes by luck
  upload();

  LocalResult out;
  program::stall_if_asked(rank_);
  executor().traffic().reset();
  round_trip(c, initiator, peer, "probe");
  out.per_peer = executor().traffic().per_peer();
  download();
  maybe_corrupt();
  if (opts_.common.check) out.wrong = bytes_differing(landing_, pattern_);
  for (int i = 0; i < opts_.common.warmup; ++i) round_trip(c, initiator, peer, "warmup");
  for (int i = 0; i < opts_.common.iters; ++i)
    out.half_rtt_us.push_back(round_trip(c, initiator, peer, "timed"));
  return out;
}

// Rank 0 gathers every rank's probe counts and the wrong bytes; rank a's times.
PairResult PingPong::collect(Pair p, const LocalResult& local) {
  WatchedSection watch("result exchange");
  const std::size_t n = static_cast<std::size_t>(nranks_);
  std::vector<std::uint64_t> mine, all(rank_ == 0 ? n * n * 4 : 0);
  for (const RankVolume& v : local.per_peer)
    mine.insert(mine.end(), {v.sent_bytes, v.sent_msgs, v.recv_bytes, v.recv_msgs});
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
             static_cast<int>(mine.size()), MPI_UINT64_T, 0, ctrl_);
  PairResult r{p, local.half_rtt_us, {}, 0, {}};
  MPI_Reduce(&local.wrong, &r.wrong, 1, MPI_UINT64_T, MPI_SUM, 0, ctrl_);
  r.half_rtt_us.resize(static_cast<std::size_t>(opts_.common.iters));
  MPI_Bcast(r.half_rtt_us.data(), opts_.common.iters, MPI_DOUBLE, p.a, ctrl_);
  r.lat = stats_of(r.half_rtt_us);
  for (std::size_t i = 0; i < all.size(); i += 4)
    r.traffic.push_back({all[i], all[i + 1], all[i + 2], all[i + 3]});
  return r;
}

PairResult PingPong::measure(Pair p, std::size_t bytes) {
  const bool in_pair = rank_ == p.a || rank_ == p.b;
  quiet_barrier(true);
  LocalResult local;
  if (in_pair) local = run_pair(p, bytes);
  else local.per_peer.assign(static_cast<std::size_t>(nranks_), {});
  quiet_barrier(in_pair);
  return collect(p, local);
}

// ---- concurrent patterns: --pattern rounds | ring ------------------------------------

// The payload a sender sends in the concurrent patterns: a function of (size, sender), so
// a message that arrives from the wrong rank does not pass the check.
std::vector<std::byte> sender_pattern(std::size_t bytes, int sender) {
  std::vector<std::byte> buf(bytes);
  const std::uint64_t seed = splitmix64(bytes ^ (static_cast<std::uint64_t>(sender + 1) << 40));
  for (std::size_t i = 0; i < buf.size(); i += 8) {
    const std::uint64_t word = splitmix64(seed ^ i);
    std::memcpy(buf.data() + i, &word, std::min<std::size_t>(8, buf.size() - i));
  }
  return buf;
}

int partner_in(const std::vector<Pair>& round, int rank) {
  for (const Pair& p : round) {
    if (p.a == rank) return p.b;
    if (p.b == rank) return p.a;
  }
  return -1;  // resting this round (N odd)
}

// Shift k of the ring as a schedule: one step in which the rank sends the message to
// `to` (r+k) and receives one from `from` (r-k); at k = N/2 both are the same rank. A
// 0-byte size is a signal each way.
Steps ring_step_steps(Plan& p, int to, int from, const char* phase) {
  const std::uint32_t tag = p.tag();
  const std::size_t bytes = p.count();
  StepBuilder s(p);
  if (bytes > 0) s.recv(from, Plan::recv(), bytes, tag).send(to, Plan::send(), bytes, tag);
  else s.wait_signal(from, tag).signal(to, tag);
  co_yield s.step(phase, 0);
}

// What rank 0 knows about one round or shift once every rank reported.
struct StepResult {
  std::vector<double> times_us;      // rank r's timed call i at [r * iters + i] (0: resting)
  std::vector<std::uint64_t> wrong;  // per rank: bytes of its probe that arrived changed
  std::vector<RankVolume> traffic;   // N x N: the probe call's counts, row r, column p
};

// The send buffer is this rank's payload; the landing buffer starts as the complement of
// what must arrive (from `expected_sender`), so nothing passes by luck.
void PingPong::prepare_payload(std::size_t bytes, std::size_t landing_bytes, int expected_sender) {
  pattern_ = sender_pattern(bytes, rank_);
  expected_ = sender_pattern(landing_bytes, expected_sender);
  landing_.resize(landing_bytes);
  for (std::size_t i = 0; i < landing_bytes; ++i) landing_[i] = ~expected_[i];
  upload();
}

// One shift-k call on this rank, timed like a round trip. Returns its whole time in
// microseconds.
double PingPong::ring_call(int to, int from, const char* phase) {
  Plan plan = payload_plan(rank_, nranks_, pattern_.size());
  Steps steps = ring_step_steps(plan, to, from, phase);
  return timed_run(*ring_comm_, plan, steps, "ring");
}

// A probe, -w warmup and -n timed calls of `call(phase)` on every rank at once, each
// after a barrier (so the pairs of a step overlap in every iteration), then rank 0
// gathers every rank's probe counts, wrong bytes and times. A resting rank
// (takes_part false) only joins the barriers.
template <class Call>
StepResult PingPong::run_step(Call call, bool takes_part) {
  const Options& o = opts_.common;
  std::vector<double> times(static_cast<std::size_t>(o.iters), 0.0);
  quiet_barrier(true);
  program::stall_if_asked(rank_);
  executor().traffic().reset();
  if (takes_part) call("probe");
  std::vector<RankVolume> per_peer = executor().traffic().per_peer();
  per_peer.resize(static_cast<std::size_t>(nranks_));
  if (takes_part) download();
  maybe_corrupt();
  std::uint64_t wrong = takes_part && o.check ? bytes_differing(landing_, expected_) : 0;
  for (int i = 0; i < o.warmup; ++i) {
    quiet_barrier(true);
    if (takes_part) call("warmup");
  }
  for (int i = 0; i < o.iters; ++i) {
    quiet_barrier(true);
    if (takes_part) times[static_cast<std::size_t>(i)] = call("timed");
  }
  quiet_barrier(true);

  WatchedSection watch("result exchange");
  const std::size_t n = static_cast<std::size_t>(nranks_);
  StepResult r;
  std::vector<std::uint64_t> mine, all(rank_ == 0 ? n * n * 4 : 0);
  for (const RankVolume& v : per_peer)
    mine.insert(mine.end(), {v.sent_bytes, v.sent_msgs, v.recv_bytes, v.recv_msgs});
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
             static_cast<int>(mine.size()), MPI_UINT64_T, 0, ctrl_);
  r.wrong.resize(rank_ == 0 ? n : 0);
  MPI_Gather(&wrong, 1, MPI_UINT64_T, r.wrong.data(), 1, MPI_UINT64_T, 0, ctrl_);
  r.times_us.resize(rank_ == 0 ? n * times.size() : 0);
  MPI_Gather(times.data(), o.iters, MPI_DOUBLE, r.times_us.data(), o.iters, MPI_DOUBLE, 0, ctrl_);
  for (std::size_t i = 0; i < all.size(); i += 4)
    r.traffic.push_back({all[i], all[i + 1], all[i + 2], all[i + 3]});
  return r;
}

// Every pair of the round does its round trip at once (the same schedule as one pair).
StepResult PingPong::measure_round(const std::vector<Pair>& round, std::size_t bytes) {
  const int peer = partner_in(round, rank_);
  const int initiator = peer < 0 ? rank_ : std::min(rank_, peer);  // whose ping travels
  prepare_payload(bytes, bytes, initiator);  // the pong is the initiator's ping, echoed
  auto call = [&](const char* phase) {
    return round_trip(*comm_with_[static_cast<std::size_t>(peer)], rank_ == initiator, peer, phase);
  };
  return run_step(call, peer >= 0);
}

// Every rank sends to r+k and receives from r-k at once.
StepResult PingPong::measure_shift(int k, std::size_t bytes) {
  const int to = (rank_ + k) % nranks_, from = (rank_ - k + nranks_) % nranks_;
  prepare_payload(bytes, bytes, from);
  return run_step([&](const char* phase) { return ring_call(to, from, phase); }, true);
}

// ---- the record of one size (rank 0) -------------------------------------------------

std::string describe(const RankVolume& v) {
  return "sent " + std::to_string(v.sent_bytes) + " B/" + std::to_string(v.sent_msgs) +
         " msgs, recv " + std::to_string(v.recv_bytes) + " B/" + std::to_string(v.recv_msgs) +
         " msgs";
}

struct SizeRecord {
  std::size_t bytes = 0;
  int nranks = 0;
  bool all_pairs = false, checked = false;
  std::vector<PairResult> pairs;
  std::vector<RankVolume> traffic, theory;  // N x N, summed over the pairs' probes
  std::uint64_t wrong = 0;
  std::string volume_error;  // empty: measured == theory, cell by cell
  Pattern pattern = Pattern::pairs;
};

void add_pair(SizeRecord& s, PairResult r) {
  const std::vector<RankVolume> want = theory::pingpong_pair(r.pair, s.bytes, s.nranks);
  const std::size_t n = static_cast<std::size_t>(s.nranks);
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (r.traffic[i] != want[i] && s.volume_error.empty())
      s.volume_error = "pair " + std::to_string(r.pair.a) + "," + std::to_string(r.pair.b) +
                       ": rank " + std::to_string(i / n) + " with rank " + std::to_string(i % n) +
                       " measured " + describe(r.traffic[i]) + "; theory " + describe(want[i]);
    s.traffic[i] += r.traffic[i];
    s.theory[i] += want[i];
  }
  s.wrong += r.wrong;
  s.pairs.push_back(std::move(r));
}

// Adds one round's or shift's probe to the size's totals, checking it cell by cell
// against its exact traffic (`what` names the step in a mismatch).
void add_step_volume(SizeRecord& s, const std::vector<RankVolume>& measured,
                     const std::vector<RankVolume>& want, const std::string& what) {
  const std::size_t n = static_cast<std::size_t>(s.nranks);
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (measured[i] != want[i] && s.volume_error.empty())
      s.volume_error = what + ": rank " + std::to_string(i / n) + " with rank " +
                       std::to_string(i % n) + " measured " + describe(measured[i]) +
                       "; theory " + describe(want[i]);
    s.traffic[i] += measured[i];
    s.theory[i] += want[i];
  }
}

std::vector<double> times_of(const StepResult& r, int rank, int iters) {
  const auto begin = r.times_us.begin() + static_cast<std::ptrdiff_t>(rank) * iters;
  return {begin, begin + iters};
}

// A round: each pair's time is its first rank's half round trip (as for one pair).
void add_round(SizeRecord& s, const std::vector<Pair>& round, const StepResult& r, int iters,
               int index) {
  add_step_volume(s, r.traffic, theory::pingpong_round(round, s.bytes, s.nranks),
                  "round " + std::to_string(index));
  for (Pair p : round) {
    PairResult pr{p, times_of(r, p.a, iters), {}, r.wrong[static_cast<std::size_t>(p.a)] +
                  r.wrong[static_cast<std::size_t>(p.b)], {}};
    pr.lat = stats_of(pr.half_rtt_us);
    s.wrong += pr.wrong;
    s.pairs.push_back(std::move(pr));
  }
}

// A shift: link a -> a+k is timed by the call of its receiver a+k, which ends once the
// message has arrived (and its own send is done). The sender's call would not do: a
// send completes when the transport has taken the bytes (TCP: into the socket buffer),
// long before they arrive over a slow link.
void add_shift(SizeRecord& s, int k, const StepResult& r, int iters) {
  add_step_volume(s, r.traffic, theory::pingpong_shift(k, s.bytes, s.nranks), "ring shift " + std::to_string(k));
  for (int a = 0; a < s.nranks; ++a) {
    const int b = (a + k) % s.nranks;
    PairResult pr{{a, b}, times_of(r, b, iters), {}, r.wrong[static_cast<std::size_t>(b)], {}};
    pr.lat = stats_of(pr.half_rtt_us);
    s.wrong += pr.wrong;
    s.pairs.push_back(std::move(pr));
  }
}

std::vector<RankVolume> per_rank(const std::vector<RankVolume>& matrix, int nranks) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  std::vector<RankVolume> out(n);
  for (std::size_t i = 0; i < matrix.size(); ++i) out[i / n] += matrix[i];
  return out;
}

// Latencies over the pairs (each pair's median), and the slowest pair.
struct PairSummary {
  Stats lat, bw;
  Pair slowest;
  int slowest_rank = -1;  // the highest median latency to its peers
};

int slowest_rank(const std::vector<PairResult>& pairs, int nranks) {
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(nranks));
  for (const PairResult& r : pairs)
    for (int rank : {r.pair.a, r.pair.b}) lat[static_cast<std::size_t>(rank)].push_back(r.lat.median);
  std::vector<double> median;
  for (const auto& l : lat) median.push_back(stats_of(l).median);
  return static_cast<int>(std::max_element(median.begin(), median.end()) - median.begin());
}

PairSummary summarise(const SizeRecord& s) {
  std::vector<double> lat, bw;
  PairSummary out;
  double worst = -1;
  for (const PairResult& r : s.pairs) {
    lat.push_back(r.lat.median);
    bw.push_back(gbps(static_cast<double>(s.bytes), r.lat.median));
    if (r.lat.median > worst) {
      worst = r.lat.median;
      out.slowest = r.pair;
    }
  }
  out.lat = stats_of(lat);
  out.bw = stats_of(bw);
  out.slowest_rank = slowest_rank(s.pairs, s.nranks);
  return out;
}

// ---- output (rank 0) -----------------------------------------------------------------

std::string pair_name(Pair p) { return std::to_string(p.a) + "," + std::to_string(p.b); }

std::string volume_status(const SizeRecord& s) { return s.volume_error.empty() ? "ok" : "MISMATCH"; }

const PairResult* first_bad_pair(const SizeRecord& s) {
  for (const PairResult& r : s.pairs)
    if (r.wrong > 0) return &r;
  return nullptr;
}

std::string wrong_text(const SizeRecord& s) { return s.checked ? std::to_string(s.wrong) : "N/A"; }

void print_header(std::ostream& os, const PingpongOptions& p, int nranks,
                  const std::vector<std::string>& warnings) {
  const Options& o = p.common;
  os << "# collscope pingpong  transport " << transport_name(o.transport) << "  nranks " << nranks << "  pairs "
     << (p.all_pairs ? "all" : pair_name(p.pair)) << "  pattern " << pattern_name(p.pattern)
     << "  iters " << o.iters << "  warmup "
     << o.warmup << "  check " << (o.check ? 1 : 0) << "\n";
  for (const std::string& e : transport_environment(o.transport)) os << "# " << e << "\n";
  for (const std::string& w : warnings) os << "# warning: " << w << "\n";
  char line[256];
  if (!p.all_pairs) {
    os << "# lat: half the round trip, timed on the pair's first rank (median, min, max over "
          "iterations); bw = size / lat; GB = 1e9 B\n#\n";
    std::snprintf(line, sizeof line, "# %12s %7s %6s %10s %10s %10s %9s %7s %8s\n", "size(B)",
                  "pair", "iters", "lat(us)", "min(us)", "max(us)", "bw(GB/s)", "#wrong", "volume");
  } else {
    os << (p.pattern == Pattern::ring
               ? "# per link a -> b: lat = median time of b's call (receive from a, send on), "
               : "# per pair: lat = median half round trip, ")
       << "bw = size / lat; min, median, max over pairs; slowest: pair with the highest lat, "
          "rank with the highest median lat\n#\n";
    std::snprintf(line, sizeof line, "# %12s %5s %6s %10s %10s %10s %9s %9s %9s %7s %5s %7s %8s\n",
                  "size(B)", "pairs", "iters", "lat_min", "lat_med", "lat_max", "bw_min", "bw_med",
                  "bw_max", "slowest", "rank", "#wrong", "volume");
  }
  os << line << std::flush;
}

void print_row(std::ostream& os, const SizeRecord& s, int iters) {
  char line[320];
  if (!s.all_pairs) {
    const PairResult& r = s.pairs.front();
    std::snprintf(line, sizeof line, "  %12zu %7s %6d %10s %10s %10s %9s %7s %8s\n", s.bytes,
                  pair_name(r.pair).c_str(), iters, fmt("%.2f", r.lat.median).c_str(),
                  fmt("%.2f", r.lat.min).c_str(), fmt("%.2f", r.lat.max).c_str(),
                  fmt("%.3f", gbps(static_cast<double>(s.bytes), r.lat.median)).c_str(), wrong_text(s).c_str(),
                  volume_status(s).c_str());
  } else {
    const PairSummary m = summarise(s);
    std::snprintf(line, sizeof line, "  %12zu %5zu %6d %10s %10s %10s %9s %9s %9s %7s %5d %7s %8s\n",
                  s.bytes, s.pairs.size(), iters, fmt("%.2f", m.lat.min).c_str(),
                  fmt("%.2f", m.lat.median).c_str(), fmt("%.2f", m.lat.max).c_str(),
                  fmt("%.3f", m.bw.min).c_str(), fmt("%.3f", m.bw.median).c_str(),
                  fmt("%.3f", m.bw.max).c_str(), pair_name(m.slowest).c_str(), m.slowest_rank,
                  wrong_text(s).c_str(), volume_status(s).c_str());
  }
  os << line;
  if (const PairResult* bad = first_bad_pair(s))
    os << "#   pair " << pair_name(bad->pair) << ": " << bad->wrong
       << " bytes arrived changed (counted at each receiver)\n";
  if (!s.volume_error.empty()) os << "#   volume mismatch: " << s.volume_error << "\n";
  os << std::flush;
}

// N x N; the diagonal is 0: not measured (self). Symmetric, except for --pattern ring,
// where [a][b] is the link a -> b.
template <class F>
nlohmann::json pair_matrix(const SizeRecord& s, F value) {
  const std::size_t n = static_cast<std::size_t>(s.nranks);
  std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
  for (const PairResult& r : s.pairs) {
    const auto a = static_cast<std::size_t>(r.pair.a), b = static_cast<std::size_t>(r.pair.b);
    m[a][b] = value(r);
    if (s.pattern != Pattern::ring) m[b][a] = m[a][b];
  }
  return m;
}

template <class F>
nlohmann::json per_rank_field(const std::vector<RankVolume>& matrix, int nranks, F field) {
  nlohmann::json a = nlohmann::json::array();
  for (const RankVolume& v : per_rank(matrix, nranks)) a.push_back(field(v));
  return a;
}

void add_volumes(nlohmann::json& j, const SizeRecord& s) {
  const auto sb = [](const RankVolume& v) { return v.sent_bytes; };
  const auto rb = [](const RankVolume& v) { return v.recv_bytes; };
  const auto sm = [](const RankVolume& v) { return v.sent_msgs; };
  const auto rm = [](const RankVolume& v) { return v.recv_msgs; };
  j["sent_bytes"] = per_rank_field(s.traffic, s.nranks, sb);
  j["recv_bytes"] = per_rank_field(s.traffic, s.nranks, rb);
  j["sent_msgs"] = per_rank_field(s.traffic, s.nranks, sm);
  j["recv_msgs"] = per_rank_field(s.traffic, s.nranks, rm);
  j["theory_sent_bytes"] = per_rank_field(s.theory, s.nranks, sb);
  j["theory_recv_bytes"] = per_rank_field(s.theory, s.nranks, rb);
  j["theory_sent_msgs"] = per_rank_field(s.theory, s.nranks, sm);
  j["theory_recv_msgs"] = per_rank_field(s.theory, s.nranks, rm);
  std::vector<std::uint64_t> traffic;
  for (const RankVolume& v : s.traffic) traffic.push_back(v.sent_bytes);
  j["traffic_bytes"] = traffic;
  j["volume"] = volume_status(s);
  j["wrong"] = s.checked ? nlohmann::json(s.wrong) : nlohmann::json(nullptr);
  const PairResult* bad = first_bad_pair(s);
  j["first_bad_pair"] = bad ? nlohmann::json{bad->pair.a, bad->pair.b} : nlohmann::json(nullptr);
}

// The times of one pair (their iterations), or of every pair (their medians).
void add_times(nlohmann::json& j, const SizeRecord& s, const Options& o, const std::string& gpu_sharing) {
  if (!s.all_pairs) {
    const PairResult& r = s.pairs.front();
    j["pair"] = {r.pair.a, r.pair.b};
    j["time_us"] = r.lat.median;
    j["time_us_min"] = r.lat.min;
    j["time_us_max"] = r.lat.max;
    program::add_spread_fields(j, r.lat, o.noise_threshold, o.round, gpu_sharing);
    j["times_us"] = r.half_rtt_us;
    return;
  }
  const PairSummary m = summarise(s);
  j["pair"] = nullptr;
  j["pairs"] = "all";
  j["time_us"] = m.lat.median;
  j["time_us_min"] = m.lat.min;
  j["time_us_max"] = m.lat.max;
  program::add_spread_fields(j, m.lat, o.noise_threshold, o.round, gpu_sharing);
  j["slowest_pair"] = {m.slowest.a, m.slowest.b};
  j["slowest_rank"] = m.slowest_rank;
  j["latency_us_matrix"] = pair_matrix(s, [](const PairResult& r) { return r.lat.median; });
  j["bw_gbps_matrix"] =
      pair_matrix(s, [&s](const PairResult& r) { return gbps(static_cast<double>(s.bytes), r.lat.median); });
}

nlohmann::json to_json(const SizeRecord& s, const PingpongOptions& p, const std::vector<int>& nodes,
                       const std::string& gpu_sharing) {
  nlohmann::json j;
  j["collective"] = "pingpong";
  j["algorithm"] = s.pattern == Pattern::pairs ? std::string_view("pingpong") : pattern_name(s.pattern);
  j["transport"] = transport_name(p.common.transport);
  j["transport_env"] = transport_environment(p.common.transport);
  j["memory"] = memory_name(p.common.memory);
  j["nranks"] = s.nranks;
  j["bytes"] = s.bytes;
  j["iters"] = p.common.iters;
  j["warmup"] = p.common.warmup;
  add_times(j, s, p.common, gpu_sharing);
  j["algbw_gbps"] = gbps(static_cast<double>(s.bytes), j["time_us"].get<double>());
  j["busbw_gbps"] = j["algbw_gbps"];
  add_volumes(j, s);
  j["node_of_rank"] = nodes;
  return j;
}

// ---- the run -------------------------------------------------------------------------

SizeRecord measure_size(PingPong& pp, std::size_t bytes) {
  const PingpongOptions& p = pp.options();
  const std::size_t cells = static_cast<std::size_t>(pp.nranks()) * static_cast<std::size_t>(pp.nranks());
  SizeRecord s{bytes, pp.nranks(), p.all_pairs, p.common.check, {}, std::vector<RankVolume>(cells),
               std::vector<RankVolume>(cells), 0, {}, p.pattern};
  if (p.pattern == Pattern::rounds) {
    const std::vector<std::vector<Pair>> rounds = patterns::tournament_rounds(pp.nranks());
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      const StepResult r = pp.measure_round(rounds[i], bytes);
      if (pp.rank() == 0) add_round(s, rounds[i], r, p.common.iters, static_cast<int>(i));
    }
    return s;
  }
  if (p.pattern == Pattern::ring) {
    for (int k = 1; k < pp.nranks(); ++k) {
      const StepResult r = pp.measure_shift(k, bytes);
      if (pp.rank() == 0) add_shift(s, k, r, p.common.iters);
    }
    return s;
  }
  for (Pair pair : pairs_to_measure(p, pp.nranks())) {
    PairResult r = pp.measure(pair, bytes);
    if (pp.rank() == 0) add_pair(s, std::move(r));
  }
  return s;
}

// One size's row on rank 0: stdout and -J (program/rows.hpp), and the HDF5 file.
void report(const SizeRecord& s, const PingPong& pp, program::RowOutput& out,
            results::ResultsFile* h5) {
  const PingpongOptions& p = pp.options();
  const nlohmann::json row = to_json(s, p, pp.nodes(), pp.gpu_sharing());
  out.write(row.dump(), [&](std::ostream& os) { print_row(os, s, p.common.iters); });
  if (h5) h5->append_pingpong(row);  // on disk when it returns
}

int finish(program::RowOutput& out, bool failed, int rows) {
  if (out.table())
    std::cout << "# rows: " << rows << "   check: " << (failed ? "FAILED" : "OK") << std::endl;
  if (!out.finish(kProgram)) return kExitRuntime;
  return failed ? kExitVerifyFailed : kExitOk;
}

int run(PingPong& pp, results::ResultsFile* h5, const std::vector<std::string>& warnings) {
  const PingpongOptions& p = pp.options();
  program::RowOutput out(p.common.format == OutputFormat::table,
                         program::JsonLines::open_on_root(p.common.json_path, pp.ctrl()));
  if (pp.rank() == 0 && out.table()) print_header(std::cout, p, pp.nranks(), warnings);
  if (pp.rank() == 0 && !out.table()) program::print_warnings(kProgram, warnings);
  bool failed = false;
  int rows = 0;
  for (std::size_t bytes : sweep_sizes(p.common)) {
    const SizeRecord s = measure_size(pp, bytes);
    pp.release_freed_buffers();  // the device buffers of this size's pairs
    if (pp.rank() != 0) continue;
    report(s, pp, out, h5);
    failed = failed || s.wrong > 0 || !s.volume_error.empty();
    ++rows;
  }
  if (h5) h5->close();
  int code = pp.rank() == 0 ? finish(out, failed, rows) : kExitOk;
  MPI_Bcast(&code, 1, MPI_INT, 0, pp.ctrl());  // every rank exits alike
  return code;
}

// `pingpong --print-rounds N`: --pattern rounds' rounds at N ranks as one JSON line,
// [[[a, b], ...], ...], for the acceptance judge (which pairs ran at once). A pure query:
// answered before MPI starts.
int print_rounds(int argc, char** argv) {
  const std::optional<int> n = argc == 3 ? parse_rank(argv[2]) : std::nullopt;
  if (!n || *n < 2) {
    std::fprintf(stderr, "%s: error: --print-rounds needs one rank count N >= 2, and nothing else\n",
                 kProgram);
    return kExitUsage;
  }
  nlohmann::json rounds = nlohmann::json::array();
  for (const std::vector<Pair>& round : patterns::tournament_rounds(*n)) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const Pair& p : round) pairs.push_back({p.a, p.b});
    rounds.push_back(std::move(pairs));
  }
  std::cout << rounds.dump() << "\n";
  return kExitOk;
}

int main_on_all_ranks(int argc, char** argv, int rank, int nranks) {
  PingpongOptions opts = parse_pingpong_options(argc, argv);
  if (opts.common.show_help) {
    if (rank == 0) std::cout << opts.common.help_text;
    return kExitOk;
  }
  check_pairs(opts, nranks);
  set_wait_policy(opts.common.wait);
  const double timeout_s = opts.common.timeout_s;
  PingPong pp(std::move(opts), MPI_COMM_WORLD);
  Watchdog watchdog(timeout_s, rank, kProgram);
  const results::RunAttributes attributes = results::collect_run_attributes(argc, argv, MPI_COMM_WORLD);
  // -O: opened on rank 0 once every input is known good; a bad file fails on all ranks.
  std::unique_ptr<results::ResultsFile> h5;
  if (!pp.options().common.output_path.empty())
    h5 = results::open_results_on_root(pp.options().common.output_path, attributes, MPI_COMM_WORLD);
  return run(pp, h5.get(), attributes.machine.warnings);
}

}  // namespace
}  // namespace collscope::bench

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--print-rounds")
    return collscope::bench::print_rounds(argc, argv);
  return collscope::program::run_mpi_main(collscope::bench::kProgram, argc, argv,
                                          collscope::bench::main_on_all_ranks);
}
