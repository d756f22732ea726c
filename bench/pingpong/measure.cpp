// pingpong's measurements (measure.hpp).
#include "measure.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "collscope/program/faults.hpp"
#include "collscope/program/node_map.hpp"
#include "collscope/program/quiet_barrier.hpp"
#include "collscope/program/watchdog.hpp"
#include "collscope/progress.hpp"
#include "collscope/runtime/gpu_sharing.hpp"
#include "collscope/splitmix.hpp"

namespace collscope::bench::pingpong {
namespace {

using program::stats_of;
using program::WatchedSection;

// Fills buf with splitmix words of `seed` and each word's offset.
void fill_words(std::vector<std::byte>& buf, std::uint64_t seed) {
  for (std::size_t i = 0; i < buf.size(); i += 8) {
    const std::uint64_t word = splitmix64(seed ^ i);
    std::memcpy(buf.data() + i, &word, std::min<std::size_t>(8, buf.size() - i));
  }
}

// The payload of a size: a function of (size, byte index) only, so both ranks know it.
void fill_pattern(std::vector<std::byte>& buf) { fill_words(buf, splitmix64(buf.size())); }

std::uint64_t bytes_differing(const std::vector<std::byte>& got, const std::vector<std::byte>& want) {
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return 0;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != want[i];
  return wrong;
}

// The payload a sender sends in the concurrent patterns: a function of (size, sender), so
// a message that arrives from the wrong rank does not pass the check.
std::vector<std::byte> sender_pattern(std::size_t bytes, int sender) {
  std::vector<std::byte> buf(bytes);
  fill_words(buf, splitmix64(bytes ^ (static_cast<std::uint64_t>(sender + 1) << 40)));
  return buf;
}

// Every rank's counts per peer, gathered on rank 0 as the N x N matrix (row r, column
// p: r's counts with p); empty elsewhere.
std::vector<RankVolume> gather_matrix(const std::vector<RankVolume>& per_peer, MPI_Comm ctrl) {
  int rank = 0;
  MPI_Comm_rank(ctrl, &rank);
  const std::size_t n = per_peer.size();
  std::vector<std::uint64_t> mine, all(rank == 0 ? n * n * 4 : 0);
  for (const RankVolume& v : per_peer)
    mine.insert(mine.end(), {v.sent_bytes, v.sent_msgs, v.recv_bytes, v.recv_msgs});
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
             static_cast<int>(mine.size()), MPI_UINT64_T, 0, ctrl);
  std::vector<RankVolume> matrix;
  for (std::size_t i = 0; i < all.size(); i += 4) matrix.push_back({all[i], all[i + 1], all[i + 2], all[i + 3]});
  return matrix;
}

}  // namespace

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

// This rank's part of `step` as one watched call over the payload and the landing
// buffer; returns its time in microseconds. The schedule is made before the clock
// starts, and the clock runs over the call (and, on a device, its stream) only.
double PingPong::timed_call(Comm& c, const P2pStep& step, const char* phase) {
  Plan plan = p2p_plan(rank_, nranks_, pattern_.size());
  Steps steps = pattern().schedule(plan, step, phase);
  const auto t0 = std::chrono::steady_clock::now();
  run_p2p(c, pattern(), plan, steps, {payload(), landing()});
  executor().synchronize();  // a device call is done when its stream is
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// The step's round trips, probe, warmup and timed; a round trip's time is halved.
LocalResult PingPong::run_pair(const P2pStep& step, std::size_t bytes) {
  Comm& c = *comm_with_[static_cast<std::size_t>(partner_in(step, rank_))];
  const auto half_round_trip = [&](const char* phase) { return timed_call(c, step, phase) / 2; };
  pattern_.assign(bytes, std::byte{0});
  fill_pattern(pattern_);
  landing_.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) landing_[i] = ~pattern_[i];  // nothing passes by luck
  upload();

  LocalResult out;
  program::stall_if_asked(rank_);
  executor().traffic().reset();
  half_round_trip("probe");
  out.per_peer = executor().traffic().per_peer();
  download();
  maybe_corrupt();
  if (opts_.common.check) out.wrong = bytes_differing(landing_, pattern_);
  for (int i = 0; i < opts_.common.warmup; ++i) half_round_trip("warmup");
  for (int i = 0; i < opts_.common.iters; ++i) out.half_rtt_us.push_back(half_round_trip("timed"));
  return out;
}

// Rank 0 gathers every rank's probe counts and the wrong bytes; rank a's times.
PairResult PingPong::collect(Pair p, const LocalResult& local) {
  WatchedSection watch("result exchange");
  PairResult r{p, local.half_rtt_us, {}, 0, gather_matrix(local.per_peer, ctrl_)};
  MPI_Reduce(&local.wrong, &r.wrong, 1, MPI_UINT64_T, MPI_SUM, 0, ctrl_);
  r.half_rtt_us.resize(static_cast<std::size_t>(opts_.common.iters));
  MPI_Bcast(r.half_rtt_us.data(), opts_.common.iters, MPI_DOUBLE, p.a, ctrl_);
  r.lat = stats_of(r.half_rtt_us);
  return r;
}

PairResult PingPong::measure_pair(const P2pStep& step, std::size_t bytes) {
  const Pair p = step.pairs.front();
  const bool in_pair = rank_ == p.a || rank_ == p.b;
  quiet_barrier(true);
  LocalResult local;
  if (in_pair) local = run_pair(step, bytes);
  else local.per_peer.assign(static_cast<std::size_t>(nranks_), {});
  quiet_barrier(in_pair);
  return collect(p, local);
}

// ---- concurrent patterns: --pattern rounds | ring ------------------------------------

// The send buffer is this rank's payload; the landing buffer starts as the complement of
// what must arrive (from `expected_sender`), so nothing passes by luck.
void PingPong::prepare_payload(std::size_t bytes, std::size_t landing_bytes, int expected_sender) {
  pattern_ = sender_pattern(bytes, rank_);
  expected_ = sender_pattern(landing_bytes, expected_sender);
  landing_.resize(landing_bytes);
  for (std::size_t i = 0; i < landing_bytes; ++i) landing_[i] = ~expected_[i];
  upload();
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
  r.traffic = gather_matrix(per_peer, ctrl_);
  r.wrong.resize(rank_ == 0 ? n : 0);
  MPI_Gather(&wrong, 1, MPI_UINT64_T, r.wrong.data(), 1, MPI_UINT64_T, 0, ctrl_);
  r.times_us.resize(rank_ == 0 ? n * times.size() : 0);
  MPI_Gather(times.data(), o.iters, MPI_DOUBLE, r.times_us.data(), o.iters, MPI_DOUBLE, 0, ctrl_);
  return r;
}

// Every pair of a round does its round trip at once (the same schedule as one pair),
// its time halved; in a shift, every rank sends to r+k and receives from r-k at once,
// each call timed whole.
StepResult PingPong::measure_step(const P2pStep& step, std::size_t bytes) {
  if (opts_.pattern == Pattern::ring) {
    prepare_payload(bytes, bytes, (rank_ - step.shift + nranks_) % nranks_);
    return run_step([&](const char* phase) { return timed_call(*ring_comm_, step, phase); }, true);
  }
  const int peer = partner_in(step, rank_);
  const Pair* pair = pair_of(step, rank_);
  const int initiator = pair ? pair->a : rank_;  // whose ping travels
  prepare_payload(bytes, bytes, initiator);  // the pong is the initiator's ping, echoed
  auto call = [&](const char* phase) {
    return timed_call(*comm_with_[static_cast<std::size_t>(peer)], step, phase) / 2;
  };
  return run_step(call, peer >= 0);
}

}  // namespace collscope::bench::pingpong
