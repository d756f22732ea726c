#include "collscope/bench/harness.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/mpi_transport.hpp"
#include "collscope/nccl/nccl_executor.hpp"
#include "collscope/bench/gbench.hpp"
#include "collscope/bench/measurement.hpp"
#include "collscope/bench/options.hpp"
#include "collscope/bench/report.hpp"
#include "collscope/program/faults.hpp"
#include "collscope/program/json_lines.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/node_map.hpp"
#include "collscope/program/rows.hpp"
#include "collscope/program/text.hpp"
#include "collscope/program/watchdog.hpp"
#include "collscope/build_config.hpp"
#include "collscope/collective.hpp"
#include "collscope/errors.hpp"
#include "collscope/runtime/gpu_sharing.hpp"
#include "collscope/runtime/identify.hpp"
#include "collscope/model.hpp"
#include "collscope/mpi_monitoring.hpp"
#include "collscope/schedule_trace.hpp"
#include "collscope/textbook_formulas.hpp"
#include "collscope/results/results_file.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/verify/collective_data.hpp"
#include "collscope/verify/splits.hpp"

namespace collscope::bench {
namespace {

constexpr std::size_t kCopyFields = 4;  // CopyVolume's counters, as gathered

// ---- small helpers -------------------------------------------------------------------

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) s += ' ';
    s += argv[i];
  }
  return s;
}

// The Open MPI collective settings a vendor row ran under: the environment's
// OMPI_MCA_coll_* (mpirun --mca coll_... sets them), "name=value" joined by spaces.
std::string mpi_coll_params() {
  std::vector<std::string> found;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view v(*e);
    if (v.rfind("OMPI_MCA_coll_", 0) == 0) found.emplace_back(v.substr(9));
  }
  std::sort(found.begin(), found.end());
  std::string s;
  for (const std::string& f : found) s += (s.empty() ? "" : " ") + f;
  return s;
}

// ---- the run -------------------------------------------------------------------------

struct Case {
  std::size_t bytes;  // the -b/-e size this case comes from
  DataType dtype;
  ReduceOp op;
  std::shared_ptr<const std::vector<std::uint64_t>> splits;  // all-to-all-v only
};

// A case from its probe call to its last timed call: its arguments, the buffers they
// point into, and its row.
struct OpenCase {
  OpenCase(CollArgs a, const CollectiveInfo& coll, bool in_place, int rank, int nranks)
      : args(std::move(a)), buffers(coll, args, in_place, rank, nranks) {}
  CollArgs args;
  verify::CallBuffers buffers;
  Measurement m;
};

class Runner {
 public:
  Runner(const Algorithm& algo, const CollectiveInfo& info_c, Options opts, RunInfo info,
         MPI_Comm world)
      : algo_(algo), coll_(info_c), opts_(std::move(opts)), info_(std::move(info)),
        ctrl_(dup(world)), nodes_(program::node_of_rank(world)),
        backend_(make_backend(backend_spec(opts_), world, nodes_)),
        comm_(backend_->executor(), dup(world)) {
    info_.options = &opts_;
    MPI_Comm_rank(ctrl_, &rank_);
    MPI_Comm_size(ctrl_, &nranks_);
    slowdown_ = program::slowdown_factor();
    sharing_ = gpu_sharing_of(backend_->gpu(), ctrl_);
    gpus_ = gather_gpus();
    open_monitor();
  }
  ~Runner() {
    MPI_Comm c = comm_.mpi_comm();
    MPI_Comm_free(&c);
    MPI_Comm_free(&ctrl_);
  }

  std::vector<Case> cases() const;
  void load_split_file();
  void load_model();
  void check_constraints(const std::vector<Case>& cases) const;
  Measurement measure(const Case& c);
  // A case's buffers, filled, and its row after the probe call (volume, model, check).
  std::unique_ptr<OpenCase> open_case(const Case& c);
  // Its buffers gone, on every rank (collectively: the ipc path unmaps them everywhere).
  void release_case(std::unique_ptr<OpenCase> open);
  // -w calls, each after a barrier, untimed.
  void warm_up(const CollArgs& a);
  // --gbench: one timed iteration as --timing says: a call after a barrier, or -n calls
  // back to back (their average).
  double timed_iteration(const CollArgs& a);
  // The row's bytes (nccl-tests' size) and busbw factor.
  std::size_t reported_bytes(const Case& c) const { return coll_.reported_bytes(make_args(c), nranks_); }
  double busbw_factor() const { return collscope::busbw_factor(coll_, nranks_); }

  int rank() const { return rank_; }
  MPI_Comm ctrl() const { return ctrl_; }
  const RunInfo& info() const { return info_; }
  void set_warnings(std::vector<std::string> w) { info_.warnings = std::move(w); }
  const Options& options() const { return opts_; }
  // Every rank's GPU as JSON (rank 0; empty on host memory).
  const std::vector<std::string>& gpus() const { return gpus_; }
  const std::string& path() const { return path_; }
  // How the ranks shared their GPUs (device memory; nullopt on host memory).
  const std::optional<GpuSharingOfJob>& gpu_sharing() const { return sharing_; }

 private:
  static MPI_Comm dup(MPI_Comm c) {
    MPI_Comm d;
    MPI_Comm_dup(c, &d);
    return d;
  }
  std::vector<std::string> gather_gpus();
  Executor& executor() { return backend_->executor(); }
  CollArgs make_args(const Case& c) const;
  void call(const CollArgs& a);
  double across_ranks(double us);
  double timed_call(const CollArgs& a);
  double timed_loop(const CollArgs& a);
  std::vector<double> timed_graphs(const CollArgs& a, int replays);
  void time_case(Measurement& m, const CollArgs& a);
  void collect_copies(Measurement& m, const CollArgs& a, const std::vector<std::uint64_t>& all,
                      std::size_t width);
  void barrier();
  void open_monitor();
  std::string no_library_volume() const;
  void collect_volume(Measurement& m, const CollArgs& a, const SentCounts& library);
  void collect_counted(Measurement& m, const CollArgs& a, const std::vector<std::uint64_t>& all,
                       std::size_t width);
  void collect_library_count(Measurement& m, const CollArgs& a, const std::vector<std::uint64_t>& all,
                             std::size_t width);
  void check_witness(Measurement& m, const TrafficMatrix& library, const std::vector<std::uint64_t>& all,
                     std::size_t width) const;
  void identify_vendor_algorithm(Measurement& m, const CollArgs& a, const TrafficMatrix& library) const;
  static void check_volume(Measurement& m, std::size_t r, std::size_t p, const RankVolume& counted,
                           const RankVolume& planned, const RankVolume& theory,
                           const RankVolume& mirror);
  void collect_check(Measurement& m, const Case& c, const CollArgs& a);
  void describe(Measurement& m, const Case& c, const CollArgs& a) const;
  void probe(Measurement& m, const Case& c, const CollArgs& a);
  void collect_model(Measurement& m, const CollArgs& a);
  std::vector<Case> alltoallv_cases() const;

  const Algorithm& algo_;
  const CollectiveInfo& coll_;
  std::vector<std::uint64_t> file_splits_;  // --split-file, read once
  std::optional<Model> model_;              // --model
  Options opts_;
  RunInfo info_;
  MPI_Comm ctrl_ = MPI_COMM_NULL;  // the harness's own messages: barriers, gathers
  std::vector<int> nodes_;
  std::unique_ptr<Backend> backend_;  // its executor counts what it hands to the wire
  Comm comm_;
  int rank_ = 0, nranks_ = 1;
  std::vector<std::string> gpus_;
  std::optional<GpuSharingOfJob> sharing_;
  double slowdown_ = 1;  // COLLSCOPE_DEBUG_SLOWDOWN (program/faults.hpp)
  std::string path_;                      // the executor's: host, nccl or a device path
  std::optional<DevicePath> device_path_;  // path_ when it is a device path
  // --vendor-volume: the MPI library's count around each probe call; gone (MPI_T
  // finalized) with the runner, before MPI_Finalize.
  std::unique_ptr<MpiMonitor> monitor_;
  std::string monitor_missing_;  // why there is no library count ("" when there is)
};


// Each rank's GPU as one JSON object, gathered to rank 0.
std::vector<std::string> Runner::gather_gpus() {
  path_ = executor().path();
  device_path_ = executor().device_path();
  if (!backend_->gpu()) return {};
  const device::Info& g = *backend_->gpu();
  nlohmann::json j{{"rank", rank_},           {"device", g.index},
                   {"name", g.name},          {"uuid", g.uuid},
                   {"pci_bus_id", g.pci_bus_id}, {"memory_bytes", g.memory_bytes},
                   {"driver_version", g.driver_version},
                   {"runtime_version", g.runtime_version}, {"emulated", g.emulated},
                   {"gpu_sharing", gpu_sharing_name(sharing_->per_rank[static_cast<std::size_t>(rank_)])},
                   {"mps_client", g.mps_client}};
  const std::string mine = j.dump();
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank_ == 0 ? static_cast<std::size_t>(nranks_) : 0), displs(lens.size());
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, ctrl_);
  int total = 0;
  for (std::size_t r = 0; r < lens.size(); ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::vector<char> all(static_cast<std::size_t>(total));
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, ctrl_);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lens.size(); ++r)
    out.emplace_back(all.data() + displs[r], static_cast<std::size_t>(lens[r]));
  return out;
}

std::vector<Case> Runner::cases() const {
  if (!coll_.has_data) return {{0, DataType::float32, ReduceOp::sum, nullptr}};  // barrier
  if (coll_.id == Collective::alltoallv) return alltoallv_cases();
  std::vector<Case> out;
  const std::vector<ReduceOp> ops = coll_.reduces ? opts_.ops : std::vector<ReduceOp>{ReduceOp::sum};
  for (std::size_t bytes : sweep_sizes(opts_))
    for (DataType t : opts_.dtypes)
      for (ReduceOp op : ops)
        if (!coll_.reduces || op_valid_for(op, t)) out.push_back({bytes, t, op, nullptr});
  return out;
}

// Rank 0 reads the --split-file and sends the matrix (or why it could not) to all, so a
// bad file is one usage error on every rank.
void Runner::load_split_file() {
  if (opts_.split_file.empty()) return;
  std::string error;
  const std::size_t nn = static_cast<std::size_t>(nranks_) * static_cast<std::size_t>(nranks_);
  file_splits_.assign(nn, 0);
  if (rank_ == 0) {
    try {
      file_splits_ = verify::read_splits_file(opts_.split_file, nranks_);
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  int len = static_cast<int>(error.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, ctrl_);
  error.resize(static_cast<std::size_t>(len));
  MPI_Bcast(error.data(), len, MPI_CHAR, 0, ctrl_);
  if (!error.empty()) throw UsageError(error);
  MPI_Bcast(file_splits_.data(), static_cast<int>(nn), MPI_UINT64_T, 0, ctrl_);
}

// Every rank reads the --model file (it must be readable everywhere anyway) and all
// agree whether that worked, so a bad file is one usage error on every rank.
void Runner::load_model() {
  if (opts_.model_path.empty()) return;
  std::string error;
  try {
    model_ = collscope::load_model(opts_.model_path);
  } catch (const UsageError& e) {
    error = e.what();
  }
  int bad = error.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, ctrl_);
  if (bad) throw UsageError(error);
  if (any) throw UsageError("the model file '" + opts_.model_path + "' is unreadable on another rank");
}

// all-to-all-v: per size, every rank sends about `size` bytes split by the pattern; a
// split file fixes the matrix, and so the sizes.
std::vector<Case> Runner::alltoallv_cases() const {
  std::vector<Case> out;
  const verify::SplitPattern pattern = opts_.split;
  for (DataType t : opts_.dtypes) {
    const std::size_t elem = dtype_size(t);
    if (!opts_.split_file.empty()) {
      auto m = std::make_shared<const std::vector<std::uint64_t>>(file_splits_);
      out.push_back({0, t, ReduceOp::sum, m});
      continue;
    }
    for (std::size_t bytes : sweep_sizes(opts_))
      out.push_back({bytes, t, ReduceOp::sum,
                     std::make_shared<const std::vector<std::uint64_t>>(
                         verify::make_splits(pattern, bytes / elem, nranks_, opts_.seed))});
  }
  return out;
}

CollArgs Runner::make_args(const Case& c) const {
  CollArgs a;
  a.count = coll_.count_for_bytes(c.bytes, dtype_size(c.dtype), nranks_);
  a.dtype = c.dtype;
  a.op = c.op;
  a.root = opts_.root;
  a.mem = opts_.memory;
  a.segment_bytes = opts_.segment_bytes;
  a.scratch_limit = opts_.scratch_limit;
  if (c.splits) a.splits = *c.splits;
  return a;
}

// Every constraint is checked for every case before anything runs, identically on
// every rank, so bad input never starts a half-finished sweep.
void Runner::check_constraints(const std::vector<Case>& cases) const {
  if (coll_.rooted && opts_.root >= nranks_)
    throw UsageError("--root " + std::to_string(opts_.root) + " is out of range for " +
                     std::to_string(nranks_) + " ranks");
  if (opts_.in_place && coll_.in_place == InPlace::none)
    throw UsageError(std::string(coll_.name) + " has no in-place form: drop --in-place");
  for (const Case& c : cases)
    if (auto why = call_problem(algo_, nranks_, make_args(c), opts_.in_place)) throw UsageError(*why);
}

void Runner::barrier() {
  program::WatchedSection w("barrier");
  MPI_Barrier(ctrl_);
}

// One call, complete: on a device, once its stream has reached its end.
void Runner::call(const CollArgs& a) {
  run_collective(comm_, algo_, a);
  executor().synchronize();
}

// Every rank's time, combined as --ranks says (the same value on every rank).
double Runner::across_ranks(double us) {
  program::WatchedSection w("time exchange");
  std::vector<double> all(static_cast<std::size_t>(nranks_));
  MPI_Allgather(&us, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, ctrl_);
  return combine_ranks(all, opts_.ranks);
}

double elapsed_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// --timing call: one call after a barrier, complete when timed.
double Runner::timed_call(const CollArgs& a) {
  barrier();
  const auto t0 = std::chrono::steady_clock::now();
  call(a);
  program::stretch_since(t0, slowdown_);
  return across_ranks(elapsed_us(t0));
}

// --timing loop: -n calls back to back after one barrier (each completed before the
// next only with --blocking), their average.
double Runner::timed_loop(const CollArgs& a) {
  barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < opts_.iters; ++i) {
    run_collective(comm_, algo_, a);
    if (opts_.blocking) executor().synchronize();
  }
  executor().synchronize();
  program::stretch_since(t0, slowdown_);
  return across_ranks(elapsed_us(t0) / opts_.iters);
}

// --graph N: N calls captured in a CUDA graph; each replay after a barrier, timed to its
// end, divided by N. Two graphs of the same calls take turns: the ipc path's flags are
// values the replay writes again, which only a replay of the other graph sets apart
// (device/ipc_link.cpp).
std::vector<double> Runner::timed_graphs(const CollArgs& a, int replays) {
  device::Runtime& rt = device::runtime();
  const device::Stream s = executor().queue().handle;
  device::Graph graphs[2] = {nullptr, nullptr};
  auto destroy = [&] {
    for (device::Graph g : graphs) rt.destroy_graph(g);
  };
  std::vector<double> out;
  try {
    for (device::Graph& g : graphs) {
      rt.begin_capture(s);
      for (int i = 0; i < opts_.graph_calls; ++i) run_collective(comm_, algo_, a);
      g = rt.end_capture(s);
    }
    for (int i = 0; i < replays; ++i) {
      barrier();
      const auto t0 = std::chrono::steady_clock::now();
      rt.launch(graphs[i % 2], s);
      executor().synchronize();
      program::stretch_since(t0, slowdown_);
      out.push_back(across_ranks(elapsed_us(t0) / opts_.graph_calls));
    }
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  return out;
}

// The row's times, per --timing / --graph.
void Runner::time_case(Measurement& m, const CollArgs& a) {
  if (opts_.graph_calls > 0) {
    timed_graphs(a, opts_.warmup > 0 ? 1 : 0);  // one untimed replay warms both graphs up
    m.times_us = timed_graphs(a, opts_.iters);
    return;
  }
  warm_up(a);
  if (opts_.timing == Timing::loop) {
    m.times_us.push_back(timed_loop(a));
    return;
  }
  m.times_us.reserve(static_cast<std::size_t>(opts_.iters));
  for (int i = 0; i < opts_.iters; ++i) m.times_us.push_back(timed_call(a));
}

void Runner::warm_up(const CollArgs& a) {
  for (int i = 0; i < opts_.warmup; ++i) timed_call(a);
}

double Runner::timed_iteration(const CollArgs& a) {
  return opts_.timing == Timing::loop ? timed_loop(a) : timed_call(a);
}

// --vendor-volume: the MPI library's own count (collscope/mpi_monitoring.hpp), on every
// rank or on none (the ranks agree, so the rows never mix sources).
void Runner::open_monitor() {
  if (!opts_.vendor_volume) {
    monitor_missing_ = "the MPI library's count is off (--vendor-volume turns it on)";
    return;
  }
  monitor_ = std::make_unique<MpiMonitor>();
  int here = monitor_->available() ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_MIN, ctrl_);
  if (everywhere == 1) return;
  monitor_missing_ = here ? "the MPI library counts nothing on another rank" : monitor_->why_not();
  monitor_.reset();
}

// Why a vendor row has no measured volume: "n/a: <reason>".
std::string Runner::no_library_volume() const {
  if (algo_.name == "nccl") return "n/a: NCCL counts nothing collscope can read";
  if (monitor_) return "n/a: " + monitor_->filter_reason();
  return "n/a: " + monitor_missing_;
}

// Every rank's volume of the probe call, per peer, gathered to rank 0: the executor's
// counter (4 numbers per peer: what it handed to the transport) and its copies
// (kCopyFields), then, when the library counts (on every rank alike), what it counted
// this rank sending (2 per peer). A hand-written row sets its counter against the
// schedule's planned volume and the closed-form theory (all three must agree, per rank
// and per peer) and against the library's count where there is one; a vendor row has
// only the library's count.
void Runner::collect_volume(Measurement& m, const CollArgs& a, const SentCounts& library) {
  const std::size_t n = static_cast<std::size_t>(nranks_);
  const std::size_t width = n * (monitor_ ? 6 : 4) + kCopyFields;
  std::vector<std::uint64_t> mine, all(rank_ == 0 ? n * width : 0);
  for (const RankVolume& v : executor().traffic().per_peer())
    mine.insert(mine.end(), {v.sent_bytes, v.sent_msgs, v.recv_bytes, v.recv_msgs});
  const CopyVolume& c = executor().traffic().copies();
  mine.insert(mine.end(), {c.to_host, c.to_device, c.from_peer, c.reduced_from_peer});
  if (monitor_)
    for (std::size_t p = 0; p < n; ++p) mine.insert(mine.end(), {library.bytes[p], library.msgs[p]});
  {
    program::WatchedSection w("volume gather");
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
               static_cast<int>(mine.size()), MPI_UINT64_T, 0, ctrl_);
  }
  if (rank_ != 0) return;
  if (algo_.is_vendor()) {
    const bool counted = monitor_ && !monitor_->filtered();
    m.volume_source = counted ? kMpiMonitoringSource : no_library_volume();
    if (counted) collect_library_count(m, a, all, width);
    return;
  }
  m.volume_source = "counted";
  collect_counted(m, a, all, width);
  if (monitor_) collect_library_count(m, a, all, width);
}

// A hand-written row: the counter's volume against the planned volume and the theory.
void Runner::collect_counted(Measurement& m, const CollArgs& a, const std::vector<std::uint64_t>& all,
                             std::size_t width) {
  const std::size_t n = static_cast<std::size_t>(nranks_);
  auto cell = [&](std::size_t r, std::size_t p) {
    const std::uint64_t* v = &all[r * width + p * 4];
    return RankVolume{v[0], v[1], v[2], v[3]};
  };
  m.measured.assign(n, {});
  m.theory.assign(n, {});
  m.traffic_bytes.assign(n * n, 0);
  m.theory_traffic_bytes.assign(n * n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    const int rank = static_cast<int>(r);
    const std::vector<RankVolume> theory = theory_per_peer(algo_.theory, rank, nranks_, a);
    const std::vector<RankVolume> planned = planned_volume(algo_, rank, nranks_, a, opts_.in_place);
    for (std::size_t p = 0; p < n; ++p) {
      const RankVolume counted = cell(r, p);
      m.measured[r] += counted;
      m.theory[r] += theory[p];
      m.traffic_bytes[r * n + p] = counted.sent_bytes;
      m.theory_traffic_bytes[r * n + p] = theory[p].sent_bytes;
      if (m.volume_ok) check_volume(m, r, p, counted, planned[p], theory[p], cell(p, r));
    }
  }
  collect_copies(m, a, all, width);
  m.volume_checked = true;
}

// The MPI library's count, as an N x N matrix: a vendor row's measured volume (and the
// algorithm it identifies), a hand-written row's witness.
void Runner::collect_library_count(Measurement& m, const CollArgs& a,
                                   const std::vector<std::uint64_t>& all, std::size_t width) {
  const std::size_t n = static_cast<std::size_t>(nranks_);
  TrafficMatrix library{nranks_, std::vector<std::uint64_t>(n * n), std::vector<std::uint64_t>(n * n)};
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t p = 0; p < n; ++p) {
      const std::uint64_t* v = &all[r * width + n * 4 + kCopyFields + p * 2];
      library.bytes[r * n + p] = v[0];
      library.msgs[r * n + p] = v[1];
    }
  if (!algo_.is_vendor()) return check_witness(m, library, all, width);
  m.measured.assign(n, {});
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t p = 0; p < n; ++p) {
      const std::uint64_t bytes = library.bytes[r * n + p], msgs = library.msgs[r * n + p];
      m.measured[r].sent_bytes += bytes;
      m.measured[r].sent_msgs += msgs;
      m.measured[p].recv_bytes += bytes;
      m.measured[p].recv_msgs += msgs;
    }
  m.traffic_bytes = library.bytes;
  identify_vendor_algorithm(m, a, library);
}

// The library saw exactly the messages the counter counted, per sender and receiver:
// the data and the zero-byte signals of the hand-written schedule, as user messages.
void Runner::check_witness(Measurement& m, const TrafficMatrix& library,
                           const std::vector<std::uint64_t>& all, std::size_t width) const {
  const std::size_t n = static_cast<std::size_t>(nranks_);
  m.volume_witness = kMpiMonitoringSource;
  for (std::size_t r = 0; r < n && m.volume_ok; ++r)
    for (std::size_t p = 0; p < n && m.volume_ok; ++p) {
      const std::uint64_t* counted = &all[r * width + p * 4];  // sent bytes, sent messages
      const std::uint64_t bytes = library.bytes[r * n + p], msgs = library.msgs[r * n + p];
      if (counted[0] == bytes && counted[1] == msgs) continue;
      m.volume_ok = false;
      m.volume_error = "rank " + std::to_string(r) + " to rank " + std::to_string(p) + ": counted " +
                       std::to_string(counted[0]) + " B/" + std::to_string(counted[1]) +
                       " msgs; the MPI library (" + kMpiMonitoringSource + ") saw " +
                       std::to_string(bytes) + " B/" + std::to_string(msgs) + " msgs";
    }
}

// Which hand-written algorithm's theory the vendor's traffic equals. Segmented
// candidates assume the library's segment: --segment when given, else none (one segment
// per message, Open MPI's fixed decision).
void Runner::identify_vendor_algorithm(Measurement& m, const CollArgs& a,
                                       const TrafficMatrix& library) const {
  CollArgs as_library = a;
  as_library.segment_bytes = opts_.segment_given ? opts_.segment_bytes : kUnsegmented;
  const std::vector<Candidate> candidates = hand_written_candidates(algo_.collective);
  if (candidates.empty()) return;
  const Identification id = identify_algorithm(library, candidates, as_library);
  m.vendor_algorithm = id.name();
  m.vendor_algorithm_closest = id.closest;
  m.vendor_algorithm_off_bytes = static_cast<std::int64_t>(id.off_bytes);
  m.vendor_algorithm_off_msgs = static_cast<std::int64_t>(id.off_msgs);
}

// The staged and ipc paths' copies against their theory, which follows from the wire's:
// a staged rank copies to the host what it sends and to the device what it receives; an
// ipc rank copies out of its peers' memory what it receives, except the receives a
// reduction consumes, which it reduces in the sender's memory (planned from the
// schedule, consumed_receives.hpp; none with --no-fuse).
void Runner::collect_copies(Measurement& m, const CollArgs& a, const std::vector<std::uint64_t>& all,
                           std::size_t width) {
  if (device_path_ != DevicePath::staged && device_path_ != DevicePath::ipc) return;
  const std::size_t n = static_cast<std::size_t>(nranks_);
  for (std::size_t r = 0; r < n; ++r) {
    const std::uint64_t* c = &all[r * width + n * 4];
    m.copies.push_back({c[0], c[1], c[2], c[3]});
    const RankVolume& t = m.theory[r];
    const std::uint64_t consumed =
        device_path_ == DevicePath::ipc && opts_.fuse
            ? planned_consumed_bytes(algo_, static_cast<int>(r), nranks_, a, opts_.in_place)
            : 0;
    m.theory_copies.push_back(device_path_ == DevicePath::staged
                                  ? CopyVolume{t.sent_bytes, t.recv_bytes, 0, 0}
                                  : CopyVolume{0, 0, t.recv_bytes - consumed, consumed});
    if (m.volume_ok && !(m.copies[r] == m.theory_copies[r])) {
      const CopyVolume& want = m.theory_copies[r];
      m.volume_ok = false;
      m.volume_error = "rank " + std::to_string(r) + " copied " + std::to_string(c[0]) +
                       " B to the host, " + std::to_string(c[1]) + " B to the device, " +
                       std::to_string(c[2]) + " B from peers and reduced " + std::to_string(c[3]) +
                       " B in peers' memory; the theory says " + std::to_string(want.to_host) +
                       ", " + std::to_string(want.to_device) + ", " +
                       std::to_string(want.from_peer) + " and " +
                       std::to_string(want.reduced_from_peer) + " B";
    }
  }
}

// Records the first disagreement: counted against planned and theory, and what r sent
// p against what p received from r.
void Runner::check_volume(Measurement& m, std::size_t r, std::size_t p, const RankVolume& counted,
                          const RankVolume& planned, const RankVolume& theory,
                          const RankVolume& mirror) {
  auto text = [](const RankVolume& v) {
    return "sent " + std::to_string(v.sent_bytes) + " B/" + std::to_string(v.sent_msgs) +
           " msgs, recv " + std::to_string(v.recv_bytes) + " B/" + std::to_string(v.recv_msgs) + " msgs";
  };
  const std::string pair = "rank " + std::to_string(r) + " with rank " + std::to_string(p) + ": ";
  if (!(counted == planned) || !(counted == theory)) {
    m.volume_ok = false;
    m.volume_error = pair + "counted " + text(counted) + "; planned " + text(planned) +
                     "; theory " + text(theory);
  } else if (counted.sent_bytes != mirror.recv_bytes || counted.sent_msgs != mirror.recv_msgs) {
    m.volume_ok = false;
    m.volume_error = pair + "sent " + std::to_string(counted.sent_bytes) + " B, which rank " +
                     std::to_string(p) + " counts as " + std::to_string(mirror.recv_bytes) + " B received";
  }
}

// The textbook closed form for this algorithm, and with --model the time the cost model
// predicts for the algorithm's schedules on every rank (hand-written algorithms only).
void Runner::collect_model(Measurement& m, const CollArgs& a) {
  if (rank_ != 0) return;
  if (model_ && !algo_.is_vendor())
    m.predicted_us = predict_us(traces_of(algo_, nranks_, a, opts_.in_place), nodes_, *model_);
  m.model = opts_.model_path;
  const std::string_view coll = algo_.collective_name();
  if (auto bytes = textbook_sent_bytes(coll, algo_.name, nranks_, a)) m.textbook_sent_bytes = *bytes;
  if (auto text = textbook_formula_text(coll, algo_.name)) m.textbook_formula = std::string(*text);
}

void Runner::collect_check(Measurement& m, const Case& c, const CollArgs& a) {
  const verify::DataSpec ds = verify::data_spec_for(coll_, opts_.seed, c.dtype, c.op, nranks_);
  const verify::Mismatch mm = verify::check_collective_result(coll_, a, ds, rank_);
  const std::int64_t mine[2] = {static_cast<std::int64_t>(mm.wrong), mm.first_index};
  std::vector<std::int64_t> all(rank_ == 0 ? 2 * static_cast<std::size_t>(nranks_) : 0);
  {
    program::WatchedSection w("check gather");
    MPI_Gather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, 0, ctrl_);
  }
  m.checked = true;
  for (int r = 0; r < nranks_ && rank_ == 0; ++r) {
    m.wrong += static_cast<std::uint64_t>(all[2 * r]);
    if (all[2 * r] > 0 && m.first_bad_rank < 0) {
      m.first_bad_rank = r;
      m.first_bad_index = all[2 * r + 1];
    }
  }
}

// One row: its buffers live for the row, then go (collectively: the ipc path unmaps
// them on every rank first).
Measurement Runner::measure(const Case& c) {
  std::unique_ptr<OpenCase> open = open_case(c);
  time_case(open->m, open->args);
  open->m.summarise(busbw_factor());
  Measurement m = std::move(open->m);
  release_case(std::move(open));
  return m;
}

void Runner::release_case(std::unique_ptr<OpenCase> open) {
  open.reset();
  barrier();
  executor().release_freed_buffers();
}

std::unique_ptr<OpenCase> Runner::open_case(const Case& c) {
  auto open = std::make_unique<OpenCase>(make_args(c), coll_, opts_.in_place, rank_, nranks_);
  CollArgs& a = open->args;
  verify::fill_collective_input(coll_, a,
                                verify::data_spec_for(coll_, opts_.seed, c.dtype, c.op, nranks_),
                                rank_);
  describe(open->m, c, a);
  probe(open->m, c, a);
  return open;
}

// The row's fields that say what was run, and how.
void Runner::describe(Measurement& m, const Case& c, const CollArgs& a) const {
  m.collective = info_.collective;
  m.algorithm = info_.algorithm;
  m.transport = info_.transport;
  m.transport_env = info_.transport_env;
  m.memory = opts_.memory;
  m.dtype = c.dtype;
  m.op = c.op;
  m.root = coll_.rooted ? opts_.root : -1;
  m.nranks = nranks_;
  m.count = a.count;
  m.bytes = coll_.reported_bytes(a, nranks_);
  m.in_place = opts_.in_place;
  m.segment_bytes = opts_.segment_bytes;
  m.seed = opts_.seed;
  m.max_scratch_bytes = opts_.scratch_limit;
  m.iters = opts_.iters;
  m.warmup = opts_.warmup;
  m.noise_threshold = opts_.noise_threshold;
  m.round = opts_.round;
  if (sharing_) m.gpu_sharing = std::string(gpu_sharing_name(sharing_->job));
  if (algo_.name == "mpi") m.mpi_coll_params = mpi_coll_params();
  m.path = path_;
  if (opts_.memory == MemoryKind::device) m.wait = std::string(wait_policy_name(opts_.wait));
  m.timing = opts_.graph_calls > 0 ? "graph" : std::string(timing_name(opts_.timing));
  m.ranks = std::string(rank_combine_name(opts_.ranks));
  if (opts_.transport == TransportKind::nccl) m.nccl_version = nccl_runtime_version();
  m.graph_calls = opts_.graph_calls;
  m.blocking = opts_.blocking;
  if (algo_.vendor)
    m.vendor_call = algo_.vendor->implementation ? algo_.vendor->implementation(nranks_, a)
                                                 : std::string(algo_.vendor->function);
  m.gpus = gpus_;
  m.node_of_rank = nodes_;
  if (c.splits) {
    m.split = opts_.split_file.empty() ? std::string(verify::split_pattern_name(opts_.split))
                                       : "file:" + opts_.split_file;
    m.splits = *c.splits;
  }
}

// The probe call: its traffic is the counted volume (and, with --vendor-volume, what the
// MPI library counted: nothing else sends on this rank between start and stop), its
// result is checked.
void Runner::probe(Measurement& m, const Case& c, const CollArgs& a) {
  executor().traffic().reset();
  barrier();
  program::stall_if_asked(rank_);
  if (monitor_) monitor_->start();
  call(a);
  const SentCounts library = monitor_ ? monitor_->stop() : SentCounts{};
  collect_volume(m, a, library);
  collect_model(m, a);
  if (opts_.check) collect_check(m, c, a);
}

// ---- the rows ------------------------------------------------------------------------

// One row on rank 0: stdout and -J (program/rows.hpp), and the HDF5 file.
void write_row(program::RowOutput& out, const Measurement& m, results::ResultsFile* h5) {
  nlohmann::json j = to_json(m);
  out.write(j.dump(), [&m](std::ostream& os) { print_table_row(os, m); });
  j.erase("gpus");                     // HDF5 keeps them once per run, in /runs
  if (h5) h5->append_collective(j);  // on disk when it returns
}

// What a row adds to the run's totals.
void tally(TableTotals& t, const Measurement& m) {
  ++t.rows;
  t.wrong += m.wrong;
  t.volume_mismatches += m.volume_ok ? 0 : 1;
  t.noisy += m.noisy ? 1 : 0;
  t.busbw_sum += m.busbw_gbps;
}

int exit_code(const TableTotals& t) {
  return t.wrong > 0 || t.volume_mismatches > 0 ? kExitVerifyFailed : kExitOk;
}

// Every case in turn, each row written by rank 0 as soon as it is measured (the other
// ranks stay silent); the exit code says whether every row checked out.
int run(Runner& runner, const std::vector<Case>& cases, results::ResultsFile* h5) {
  const Options& o = runner.options();
  const bool root = runner.rank() == 0;
  program::RowOutput out(o.format == OutputFormat::table,
                         program::JsonLines::open_on_root(o.json_path, runner.ctrl()));
  if (root && out.table()) print_table_header(std::cout, runner.info());
  TableTotals t;
  for (const Case& c : cases) {
    const Measurement m = runner.measure(c);
    if (!root) continue;
    write_row(out, m, h5);
    tally(t, m);
  }
  if (!root) return kExitOk;
  if (out.table()) print_table_footer(std::cout, t);
  if (!out.finish(runner.info().program)) return kExitRuntime;
  return exit_code(t);
}

// Why a row's time must not be reported as a good one ("" when it may).
std::string what_is_wrong(const Measurement& m) {
  if (m.wrong > 0)
    return std::to_string(m.wrong) + " wrong elements (first at rank " +
           std::to_string(m.first_bad_rank) + ", index " + std::to_string(m.first_bad_index) + ")";
  if (!m.volume_ok) return "volume MISMATCH: " + m.volume_error;
  return "";
}

// "allreduce_ring/mpi/host/float/sum/1024": what pairs a case's benchmark across runs
// (compare.py matches the names); the size is the -b/-e size the case comes from.
std::string gbench_name(const RunInfo& info, const Options& o, const Case& c) {
  return info.program + "/" + info.transport + "/" + std::string(memory_name(o.memory)) + "/" +
         std::string(dtype_name(c.dtype)) + "/" + std::string(op_name(c.op)) + "/" +
         std::to_string(c.bytes);
}

// --gbench: the library's iterations per repetition: -n calls, or one loop of -n calls.
int gbench_iterations(const Options& o) { return o.timing == Timing::loop ? 1 : o.iters; }

std::vector<std::string> gbench_names(const RunInfo& info, const Options& o,
                                      const std::vector<Case>& cases) {
  std::vector<std::string> names;
  for (const Case& c : cases) names.push_back(gbench_name(info, o, c));
  return names;
}

// --gbench: every case through Google Benchmark (gbench.hpp); its rows to -J and -O.
int run_with_gbench(Runner& runner, const std::vector<Case>& cases, results::ResultsFile* h5,
                    const std::string& executable) {
  const Options& o = runner.options();
  const bool root = runner.rank() == 0;
  program::RowOutput out(false, program::JsonLines::open_on_root(o.json_path, runner.ctrl()),
                         /*to_stdout=*/false);
  TableTotals t;
  std::unique_ptr<OpenCase> open;  // the case whose repetitions are running
  std::vector<GbenchCase> benchmarks;
  for (const Case& c : cases) {
    GbenchCase g;
    g.name = gbench_name(runner.info(), o, c);
    g.bytes = static_cast<double>(runner.reported_bytes(c));
    g.busbw_factor = runner.busbw_factor();
    g.open = [&runner, &open, c, root] {
      open = runner.open_case(c);
      runner.warm_up(open->args);
      return root ? what_is_wrong(open->m) : std::string();
    };
    g.timed_us = [&runner, &open] {
      const double us = runner.timed_iteration(open->args);
      open->m.times_us.push_back(us);
      return us;
    };
    g.close = [&] {
      open->m.summarise(runner.busbw_factor());
      if (root) {
        write_row(out, open->m, h5);
        tally(t, open->m);
      }
      runner.release_case(std::move(open));
    };
    benchmarks.push_back(std::move(g));
  }
  GbenchRun run{gbench_iterations(o), runner.info().program, executable,
                {{"collscope_nranks", std::to_string(runner.info().nranks)},
                 {"collscope_timing", std::string(timing_name(o.timing))},
                 {"collscope_ranks", std::string(rank_combine_name(o.ranks))}}};
  const bool in_place = run_gbench(benchmarks, o.gbench, run, runner.ctrl());
  if (!root) return kExitOk;
  if (!out.finish(runner.info().program) || !in_place) return kExitRuntime;
  return exit_code(t);
}

// A failure on one rank (a transport error) must end the job at once: unwinding would
// destroy the transport, whose clean shutdown waits for peers that are still inside
// the call. Errors every rank raises alike go on to the normal exit path.
int run_or_abort(Runner& runner, const std::vector<Case>& cases, results::ResultsFile* h5,
                 const std::string& program, int rank, const std::string& executable) {
  try {
    const int code = runner.options().gbench.on ? run_with_gbench(runner, cases, h5, executable)
                                                : run(runner, cases, h5);
    if (h5) h5->close();
    return code;
  } catch (const UsageError&) {
    throw;
  } catch (const RuntimeErrorOnAllRanks&) {
    throw;
  } catch (const std::exception& e) {
    std::cerr << program << ": rank " << rank << ": error: " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, kExitRuntime);
  }
  return kExitRuntime;
}

// Flags that belong to one collective only.
void check_collective_options(const CollectiveInfo& c, const Algorithm& a, const Options& o) {
  const bool split_given = o.split != verify::SplitPattern::uniform || !o.split_file.empty();
  if (split_given && c.id != Collective::alltoallv)
    throw UsageError("--split and --split-file apply to alltoallv only");
  if (!a.is_vendor()) return;
  const std::string name = a.full_name();
  // A vendor collective runs inside its library: a row saying ucx would be a lie.
  if (transport_name(o.transport) != a.name)
    throw UsageError(name + " runs the " + (a.name == "nccl" ? "NCCL" : "MPI") +
                     " library's own " + std::string(c.name) + ": -t " +
                     std::string(transport_name(o.transport)) +
                     " does not apply (the hand-written algorithms take it)");
  if (!a.vendor->available()) throw UsageError("the library has no such collective");
  if (o.in_place && !a.vendor->in_place)
    throw UsageError(std::string(a.vendor->function) + " has no in-place form: drop --in-place");
  if (a.name == "mpi" && o.memory == MemoryKind::device) {
    if (o.path && *o.path != DevicePath::cuda_aware)
      throw UsageError(name + " takes device buffers only on the cuda_aware path (--path " +
                       std::string(path_name(*o.path)) +
                       " is collscope's own)");
    if (const std::string why = mpi_device_memory_refusal(); !why.empty())
      throw UsageError(name + " takes device buffers only on the cuda_aware path, and " + why);
  }
}

// The environment variables that shape the row's transport (UCX_*, NCCL_*).
std::vector<std::string> environment_of(const Options& o) {
  if (o.transport == TransportKind::nccl) return nccl_environment();
  return transport_environment(o.transport);
}

}  // namespace

// The /runs row: the MPI job's attributes and, on device memory, every rank's GPU (gathered
// on rank 0, which writes the file) and the NCCL library this run opened.
results::RunAttributes run_attributes(const Runner& runner, const Options& opts, int argc,
                                      char** argv) {
  results::RunAttributes a = results::collect_run_attributes(argc, argv, MPI_COMM_WORLD);
  for (const std::string& text : runner.gpus()) {
    const nlohmann::json j = nlohmann::json::parse(text);
    results::RunGpu g;
    g.rank = j["rank"];
    g.device = j["device"];
    g.name = j["name"];
    g.uuid = j["uuid"];
    g.pci_bus_id = j["pci_bus_id"];
    g.memory_bytes = j["memory_bytes"];
    g.driver_version = j["driver_version"];
    g.runtime_version = j["runtime_version"];
    g.emulated = j["emulated"];
    g.gpu_sharing = j["gpu_sharing"];
    g.mps_client = j["mps_client"];
    a.device_runtime = g.emulated ? "emulated" : "cuda";
    a.gpus.push_back(std::move(g));
  }
  if (opts.transport == TransportKind::nccl) a.nccl_runtime_version = nccl_runtime_version();
  if (runner.gpu_sharing() && runner.gpu_sharing()->job == GpuSharing::time_sliced)
    a.machine.warnings.push_back(time_sliced_warning(*runner.gpu_sharing()));
  return a;
}

int benchmark_main(std::string_view collective, std::string_view algorithm, int argc,
                   char** argv) {
  const std::string name = std::string(collective) + "_" + std::string(algorithm);
  // The options come first: they decide MPI's thread level and whether the library
  // counts its traffic (--vendor-volume, read at MPI_Init). A bad command line is
  // reported once MPI runs, by rank 0.
  const std::string_view library = algorithm == "mpi" || algorithm == "nccl" ? algorithm : "";
  std::optional<Options> parsed;
  std::string bad_command_line;
  try {
    parsed = parse_options(argc, argv, name, library);
  } catch (const UsageError& e) {
    bad_command_line = e.what();
  }
  const auto threads = parsed && runs_other_threads(*parsed) ? program::MpiThreads::funneled
                                                             : program::MpiThreads::single;
  if (parsed && parsed->vendor_volume) request_mpi_monitoring();
  if (parsed)
    for (const auto& [param, value] : parsed->mca_params)
      setenv(("OMPI_MCA_" + param).c_str(), value.c_str(), 1);  // the command line wins
  return program::run_mpi_program(name, argc, argv, [&](int rank, int nranks) {
    const Algorithm* algo = find_algorithm(collective, algorithm);
    const CollectiveInfo* coll = find_collective(collective);
    if (!algo || !coll) throw UsageError("no algorithm " + name + " in this build");
    if (!parsed) throw UsageError(bad_command_line);
    Options opts = *parsed;
    if (opts.show_help) {
      if (rank == 0) std::cout << opts.help_text;
      return static_cast<int>(kExitOk);
    }
    check_collective_options(*coll, *algo, opts);
    set_wait_policy(opts.wait);
    RunInfo info{name, std::string(collective), std::string(algorithm),
                 std::string(transport_name(opts.transport)),
                 command_line(argc, argv), environment_of(opts), nranks, nullptr, {}};
    Runner runner(*algo, *coll, opts, info, MPI_COMM_WORLD);
    runner.load_split_file();
    runner.load_model();
    const std::vector<Case> cases = runner.cases();
    runner.check_constraints(cases);
    if (opts.gbench.on)  // --benchmark_filter selects something
      gbench_selected(gbench_names(runner.info(), opts, cases), opts.gbench, gbench_iterations(opts));
    program::Watchdog watchdog(opts.timeout_s, rank, name);
    const results::RunAttributes attributes = run_attributes(runner, opts, argc, argv);
    runner.set_warnings(attributes.machine.warnings);
    // -O: opened on rank 0 once every input is known good; a bad file fails on all ranks.
    std::unique_ptr<results::ResultsFile> h5;
    if (!opts.output_path.empty())
      h5 = results::open_results_on_root(opts.output_path, attributes, MPI_COMM_WORLD);
    // The table prints them under its header; beside JSON lines or Google Benchmark's
    // report they go to stderr.
    if (rank == 0 && (opts.format != OutputFormat::table || opts.gbench.on))
      program::print_warnings(name, attributes.machine.warnings);
    return run_or_abort(runner, cases, h5.get(), name, rank, argv[0]);
  }, threads);
}

}  // namespace collscope::bench
