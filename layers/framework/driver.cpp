#include "collscope/layers/framework/driver.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "collscope/agree.hpp"
#include "collscope/errors.hpp"
#include "collscope/layers/framework/options.hpp"
#include "collscope/layers/framework/record.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/program/json_lines.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/text.hpp"
#include "collscope/program/watchdog.hpp"
#include "collscope/results/results_file.hpp"
#include "collscope/runtime/gpu_sharing.hpp"
#include "collscope/textbook_formulas.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/wait_policy.hpp"

namespace collscope::layers {
namespace {

using program::WatchedSection;

// ---- step 1: everything that needs only the command line and the world size ------------

struct Prepared {
  LayerDescription description;
  LayerOptions options;
  ParallelConfig config;
  AlgorithmChoice algorithms;
  std::vector<PlannedCall> plan;
  Fault fault;  // COLLSCOPE_DEBUG_LAYER_FAULT (collective_calls.hpp)
};

CollArgs call_args(const PlannedCall& c, DataType storage) {
  CollArgs a;
  a.count = c.count;
  a.dtype = c.dtype.value_or(storage);
  a.op = c.op;
  a.root = c.root;
  return a;
}

// Each world rank's all-to-all-v split matrix at one site (as the rank called it).
using SplitsByRank = std::vector<std::vector<std::uint64_t>>;

// Each planned call must be one its algorithm can run (scratch, counts within MPI's int).
void check_plan(const Prepared& p) {
  for (const PlannedCall& c : p.plan) {
    const Algorithm& algo = *p.algorithms.at(c.collective);
    if (algo.collective == Collective::alltoallv) continue;  // its splits come with the data
    const CollArgs a = call_args(c, p.options.storage);
    if (auto why = call_problem(algo, group_size(p.config, c.group), a, true))
      throw UsageError(c.site + ": " + *why);
  }
}

Prepared prepare(const Layer& layer, LayerDescription description, LayerOptions options,
                 int world) {
  Prepared p{std::move(description), std::move(options), {}, {}, {}, fault_from_environment()};
  p.config = parallel_config(p.description, p.options, world);
  ModelDims dims = p.options.shape.dims;
  dims.sp = p.description.sequence_parallel;
  if (auto why = config_violation(p.config, dims)) throw UsageError(*why);
  p.algorithms = resolve_algorithms(p.description, p.options);
  p.plan = layer.plan(p.config, p.options.passes);
  check_plan(p);
  return p;
}

// ---- the exact theory and closed form of a call site, for every world rank --------------

SiteVolume planned_site(const PlannedCall& c, const Prepared& p, const SplitsByRank& splits) {
  const Algorithm& algo = *p.algorithms.at(c.collective);
  CollArgs args = call_args(c, p.options.storage);
  SiteVolume s;
  s.call = c;
  s.algorithm = std::string(algo.name);
  s.vendor = algo.is_vendor();
  s.group_size = group_size(p.config, c.group);
  s.dtype = args.dtype;
  s.bytes = args.bytes();
  if (!splits.empty())  // alltoallv: the elements of every group's matrix
    for (const std::vector<int>& g : rank_groups(p.config, c.group))
      for (std::uint64_t e : splits[static_cast<std::size_t>(g.front())])
        s.bytes += e * args.elem_size();
  if (algo.theory)
    for (int r = 0; r < p.config.world; ++r) {
      if (!splits.empty()) args.splits = splits[static_cast<std::size_t>(r)];
      s.theory.push_back(
          theory_total(algo.theory, group_of(p.config, c.group, r).position, s.group_size, args));
    }
  if (!splits.empty()) args.splits = splits.front();
  // The textbook formulas' table is keyed by names (collscope/textbook_formulas.hpp).
  const std::string_view coll = algo.collective_name();
  s.closed_form_bytes = textbook_sent_bytes(coll, algo.name, s.group_size, args);
  s.closed_form = std::string(textbook_formula_text(coll, algo.name).value_or(""));
  return s;
}

std::string describe_call(const std::string& site, Collective collective, std::size_t count,
                          DataType dtype, ReduceOp op, GroupKind group) {
  return "'" + site + "' (" + std::string(collective_name(collective)) + " of " +
         std::to_string(count) + " " +
         std::string(dtype_name(dtype)) + " " + std::string(op_name(op)) + " on " +
         std::string(group_name(group)) + ")";
}

// Why the calls rank 0 made are not the planned ones, or nullopt.
std::optional<std::string> plan_mismatch(const std::vector<PlannedCall>& plan,
                                         const std::vector<CallRecord>& made, DataType storage) {
  if (plan.size() != made.size())
    return "the layer made " + std::to_string(made.size()) + " collective calls, its plan has " +
           std::to_string(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const PlannedCall& p = plan[i];
    const CallRecord& m = made[i];
    const DataType dtype = p.dtype.value_or(storage);
    if (p.site != m.site || p.collective != m.collective || p.group != m.group ||
        p.count != m.count || dtype != m.dtype || p.op != m.op)
      return "call " + std::to_string(i) + " was " +
             describe_call(m.site, m.collective, m.count, m.dtype, m.op, m.group) +
             ", the plan says " + describe_call(p.site, p.collective, p.count, dtype, p.op, p.group);
    if (p.root != m.root)
      return "call " + std::to_string(i) + " ('" + m.site + "') had root " +
             std::to_string(m.root) + ", its plan " + std::to_string(p.root);
  }
  return std::nullopt;
}

std::optional<std::string> volume_mismatch(const SiteVolume& s) {
  for (std::size_t r = 0; r < s.theory.size(); ++r) {
    const RankVolume &got = s.measured[r], &want = s.theory[r];
    if (got == want) continue;
    return s.call.site + ": rank " + std::to_string(r) + " sent " +
           std::to_string(got.sent_bytes) + " B in " + std::to_string(got.sent_msgs) +
           " messages, received " + std::to_string(got.recv_bytes) + " B; theory: sent " +
           std::to_string(want.sent_bytes) + " B in " + std::to_string(want.sent_msgs) +
           ", received " + std::to_string(want.recv_bytes) + " B";
  }
  return std::nullopt;
}

// ---- steps 2 to 4 ------------------------------------------------------------------------

// The engine of the run: the host's, or the device runtime's (the backends chose the
// GPU). A rank that cannot make it (no cuBLAS) stops every rank alike.
std::unique_ptr<Engine> make_engine(MemoryKind memory, MPI_Comm world) {
  if (memory == MemoryKind::host) return make_host_engine();
  std::string problem;
  std::unique_ptr<Engine> e;
  try {
    e = make_device_engine(device::runtime());
  } catch (const UsageError& u) {
    problem = u.what();
  }
  agree_or_throw(world, problem);
  return e;
}

// Every group's communicator, built in the layer's order on every rank.
std::vector<std::unique_ptr<GroupComm>> make_groups(const Prepared& p, MPI_Comm world) {
  std::vector<std::unique_ptr<GroupComm>> groups;
  const BackendSpec spec = backend_spec(p.options);
  for (GroupKind k : p.description.groups)
    groups.push_back(std::make_unique<GroupComm>(p.config, k, world, spec));
  return groups;
}

class LayerRun {
 public:
  LayerRun(Layer& layer, const Prepared& p, MPI_Comm world);
  ~LayerRun() { MPI_Comm_free(&ctrl_); }
  LayerRun(const LayerRun&) = delete;
  LayerRun& operator=(const LayerRun&) = delete;

  LayerRecord run();
  // Collective, once the layer (and every array) is gone: the cached device memory goes,
  // and the groups release what peers still mapped.
  void finish();

 private:
  static MPI_Comm dup(MPI_Comm c) {
    MPI_Comm d;
    MPI_Comm_dup(c, &d);
    return d;
  }
  static int rank_of(MPI_Comm c) {
    int r = 0;
    MPI_Comm_rank(c, &r);
    return r;
  }
  LayerRecord blank_record();
  void barrier();
  void run_passes();
  void begin_pass();
  void end_pass();
  void probe(LayerRecord& r);
  void time_iterations(LayerRecord& r);
  void add_iteration(LayerRecord& r, const PassTimes& t, const GemmProfile& g);
  void collect_volume(LayerRecord& r);
  std::vector<std::uint64_t> gather_measured(std::size_t calls);
  std::vector<SplitsByRank> gather_splits();
  std::string gpu_name();

  Layer& layer_;
  const Prepared& p_;
  MPI_Comm ctrl_;  // the driver's own messages: barriers, gathers, timings
  int rank_ = 0;
  std::vector<std::unique_ptr<GroupComm>> groups_;  // until calls_ takes them
  std::unique_ptr<Engine> engine_;
  CollectiveCalls calls_;
  LayerContext ctx_;
  std::string gpu_sharing_;  // "" on host memory
};

LayerRun::LayerRun(Layer& layer, const Prepared& p, MPI_Comm world)
    : layer_(layer), p_(p), ctrl_(dup(world)), rank_(rank_of(ctrl_)),
      groups_(make_groups(p, ctrl_)), engine_(make_engine(p.options.memory(), ctrl_)),
      calls_(p.algorithms, *engine_, p.fault, p.options.overlap),
      ctx_(p_.config, rank_, p.options.storage, p.options.seed, calls_, ctrl_) {
  for (auto& g : groups_) calls_.add_group(std::move(g));
  groups_.clear();
  if (const auto sharing = gpu_sharing_of(calls_.group(p_.description.groups.front()).gpu(), ctrl_))
    gpu_sharing_ = std::string(gpu_sharing_name(sharing->job));
}

void LayerRun::barrier() {
  WatchedSection w("barrier");
  MPI_Barrier(ctrl_);
}

void LayerRun::begin_pass() { calls_.timeline().begin(); }

// Every call joined, the streams drained, and what the pass gave back reusable.
void LayerRun::end_pass() {
  calls_.join_all();
  calls_.timeline().end();
  engine_->synchronize();
}

void LayerRun::run_passes() {
  if (p_.options.passes.forward) layer_.forward(ctx_);
  if (p_.options.passes.backward) layer_.backward(ctx_);
}

void LayerRun::finish() {
  engine_->synchronize();
  engine_->release_all();
  calls_.release_freed_buffers();
}

// Rank 0's GPU, as its device runtime names it ("" on host memory).
std::string LayerRun::gpu_name() {
  if (p_.options.memory() != MemoryKind::device) return "";
  const std::optional<device::Info>& gpu = calls_.group(p_.description.groups.front()).gpu();
  return gpu ? gpu->name : "";
}

// The collective name -> algorithm name of each collective, in name order (the record's).
std::map<std::string, std::string, std::less<>> algorithm_names(const AlgorithmChoice& chosen) {
  std::map<std::string, std::string, std::less<>> names;
  for (const auto& [coll, algo] : chosen)
    names[std::string(collective_name(coll))] = std::string(algo->name);
  return names;
}

// The layers' explanations of the textbook figure work out the default algorithms' exact
// volume (ring, pairwise all-to-all, ...); under another algorithm (tree, dbt, direct,
// ...) of a collective the plan calls, the measured ratio differs, and says so.
void note_other_algorithms(LayerRecord& r, const AlgorithmChoice& chosen,
                           const std::vector<PlannedCall>& plan) {
  AlgorithmChoice others;
  for (const auto& [coll, algo] : chosen) {
    const bool called = std::any_of(plan.begin(), plan.end(),
                                    [&](const PlannedCall& c) { return c.collective == coll; });
    if (called && algo != &default_algorithm(coll)) others[coll] = algo;
  }
  std::string list;  // "allreduce tree, alltoall ring", in name order
  for (const auto& [coll, name] : algorithm_names(others))
    list += (list.empty() ? "" : ", ") + coll + " " + name;
  if (!list.empty())
    r.textbook_figure.explanation += " [these factors are the default algorithms'; this run uses " +
                                     list + ", whose exact volume is the ratio measured above]";
}

LayerRecord LayerRun::blank_record() {
  const LayerOptions& o = p_.options;
  LayerRecord r;
  const bool device = o.memory() == MemoryKind::device;
  r.memory = std::string(memory_name(o.memory()));
  r.path = calls_.group(p_.description.groups.front()).path();
  r.wait = device ? std::string(wait_policy_name(o.device.wait)) : "";
  r.device_runtime = device ? engine_->runtime_name() : "";
  r.gemm = engine_->gemm().name();
  r.gpu = gpu_name();
  r.overlap = o.overlap;
  r.gpu_sharing = gpu_sharing_;
  r.noise_threshold = o.noise_threshold;
  r.round = o.round;
  r.program = std::string(p_.description.program);
  r.layer = std::string(p_.description.name);
  r.scheme = o.shape.scheme;
  r.transport = std::string(transport_name(o.transport()));
  r.transport_env = transport_environment(o.transport());
  r.config = p_.config;
  r.sp = p_.description.sequence_parallel;
  r.storage = o.storage;
  r.passes = o.passes;
  r.shape = o.shape.json;
  r.seed = o.seed;
  r.algorithms = algorithm_names(p_.algorithms);
  r.iters = o.iters;
  r.warmup = o.warmup;
  r.textbook_figure = layer_.textbook_figure(p_.config, o.passes, o.storage);
  note_other_algorithms(r, p_.algorithms, p_.plan);
  return r;
}

// The cores rank 0 may use for the float64 reference: every core of its node but one for
// each other rank there. The others only wait in the gather meanwhile (polling, unless
// Open MPI yields when idle), so a core each is all they need; sharing the cores out
// evenly made the reference N times slower at N ranks for nothing.
int cores_for_reference(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores - (local - 1));
}

// The counted, verified iteration. Backward alone needs forward's activations first.
void LayerRun::probe(LayerRecord& r) {
  if (!p_.options.passes.forward) {
    begin_pass();
    layer_.forward(ctx_);
    end_pass();
  }
  barrier();
  begin_pass();
  calls_.start_recording();
  run_passes();
  end_pass();
  calls_.stop_recording();
  engine_->recycle();
  // The executors' scratch found its size in this pass: what they outgrew (and peers
  // still mapped) goes now, not at the end.
  calls_.release_freed_buffers();
  collect_volume(r);
  // A device run's shape makes the float64 reference the verification's cost: rank 0
  // computes it with its node's cores (a host run keeps one thread).
  const bool device = p_.options.memory() == MemoryKind::device;
  const int threads = device ? cores_for_reference(ctrl_) : 1;
  std::optional<BlasThreadsOnAllCores> blas;
  if (rank_ == 0 && threads > 1) blas.emplace(threads);
  WatchedSection w("verification");
  r.checks = layer_.verify(ctx_, p_.options.passes);
}

// One timed iteration's numbers, each the slowest rank's: the totals, then per call its
// span and exposed part (when every rank made as many calls as the plan has).
void LayerRun::add_iteration(LayerRecord& r, const PassTimes& t, const GemmProfile& g) {
  const std::size_t calls = t.call_us.size();
  int lo = static_cast<int>(calls), hi = lo;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, ctrl_);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, ctrl_);
  const bool per_call = lo == hi && calls == p_.plan.size();
  std::vector<double> v{t.total_us, t.compute_us, t.comm_us,   t.exposed_us,
                        t.comm_us - t.exposed_us, g.ms * 1e3, g.flop};
  if (per_call) {
    v.insert(v.end(), t.call_us.begin(), t.call_us.end());
    v.insert(v.end(), t.call_exposed_us.begin(), t.call_exposed_us.end());
  }
  {
    WatchedSection w("time exchange");
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, ctrl_);
  }
  r.total_us.push_back(v[0]);
  r.compute_us.push_back(v[1]);
  r.comm_us.push_back(v[2]);
  r.exposed_us.push_back(v[3]);
  r.hidden_us.push_back(v[4]);
  r.gemm_us.push_back(v[5]);
  r.gemm_flop = v[6];
  for (std::size_t i = 0; per_call && i < r.sites.size() && i < calls; ++i) {
    r.sites[i].time_us.push_back(v[7 + i]);
    r.sites[i].exposed_us.push_back(v[7 + calls + i]);
  }
}

void LayerRun::time_iterations(LayerRecord& r) {
  for (int i = 0; i < p_.options.warmup + p_.options.iters; ++i) {
    barrier();
    engine_->start_gemm_profile();
    begin_pass();
    run_passes();
    end_pass();
    const PassTimes t = calls_.timeline().read();
    const GemmProfile g = engine_->finish_gemm_profile();
    engine_->recycle();
    if (i < p_.options.warmup) continue;
    add_iteration(r, t, g);
  }
}

// Rank r's recorded calls, 4 numbers each, rank after rank (on rank 0).
std::vector<std::uint64_t> LayerRun::gather_measured(std::size_t calls) {
  std::vector<std::uint64_t> mine;
  for (const CallRecord& c : calls_.records())
    mine.insert(mine.end(), {c.measured.sent_bytes, c.measured.sent_msgs, c.measured.recv_bytes,
                             c.measured.recv_msgs});
  std::vector<std::uint64_t> all(rank_ == 0 ? mine.size() * p_.config.world : 0);
  WatchedSection w("volume gather");
  MPI_Gather(mine.data(), static_cast<int>(calls * 4), MPI_UINT64_T, all.data(),
             static_cast<int>(calls * 4), MPI_UINT64_T, 0, ctrl_);
  return all;
}

// For every alltoallv site of the plan, each rank's matrix as it called it (on rank 0;
// a rank that made another call there sends zeros, and the plan check reports it).
std::vector<SplitsByRank> LayerRun::gather_splits() {
  std::vector<SplitsByRank> out(p_.plan.size());
  const std::vector<CallRecord>& made = calls_.records();
  for (std::size_t i = 0; i < p_.plan.size(); ++i) {
    const PlannedCall& c = p_.plan[i];
    if (c.collective != Collective::alltoallv) continue;
    const auto n = static_cast<std::size_t>(group_size(p_.config, c.group));
    std::vector<std::uint64_t> mine(n * n, 0);
    if (i < made.size() && made[i].splits.size() == mine.size()) mine = made[i].splits;
    std::vector<std::uint64_t> all(rank_ == 0 ? mine.size() * p_.config.world : 0);
    WatchedSection w("split matrix gather");
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
               static_cast<int>(mine.size()), MPI_UINT64_T, 0, ctrl_);
    for (int r = 0; rank_ == 0 && r < p_.config.world; ++r)
      out[i].emplace_back(all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()),
                          all.begin() + static_cast<std::ptrdiff_t>((r + 1) * mine.size()));
  }
  return out;
}

// Why the ranks of some group called an alltoallv with different matrices, or nullopt.
std::optional<std::string> splits_disagree(const PlannedCall& c, const ParallelConfig& config,
                                           const SplitsByRank& splits) {
  if (splits.empty()) return std::nullopt;
  for (const std::vector<int>& g : rank_groups(config, c.group))
    for (int r : g)
      if (splits[static_cast<std::size_t>(r)] != splits[static_cast<std::size_t>(g.front())])
        return c.site + ": ranks " + std::to_string(g.front()) + " and " + std::to_string(r) +
               " of one " + std::string(group_name(c.group)) +
               " group called it with different split matrices";
  return std::nullopt;
}

void LayerRun::collect_volume(LayerRecord& r) {
  int n = static_cast<int>(calls_.records().size()), lo = n, hi = n;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, ctrl_);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, ctrl_);
  const std::vector<std::uint64_t> all =
      lo == hi ? gather_measured(static_cast<std::size_t>(n)) : std::vector<std::uint64_t>{};
  const std::vector<SplitsByRank> splits = gather_splits();
  if (rank_ != 0) return;
  for (std::size_t i = 0; i < p_.plan.size(); ++i)
    r.sites.push_back(planned_site(p_.plan[i], p_, splits[i]));
  if (lo != hi)
    r.volume_error = "ranks made different numbers of collective calls (" + std::to_string(lo) +
                     " to " + std::to_string(hi) + ")";
  else if (auto why = plan_mismatch(p_.plan, calls_.records(), p_.options.storage))
    r.volume_error = *why;
  for (std::size_t i = 0; i < p_.plan.size() && r.volume_error.empty(); ++i)
    if (auto why = splits_disagree(p_.plan[i], p_.config, splits[i])) r.volume_error = *why;
  if (!r.volume_error.empty()) return;
  r.volume_measured = true;
  for (std::size_t i = 0; i < r.sites.size(); ++i) {
    SiteVolume& s = r.sites[i];
    r.volume_measured = r.volume_measured && !s.vendor && !s.theory.empty();
    if (s.vendor) continue;  // the counter saw nothing of the library's traffic
    for (int rank = 0; rank < p_.config.world; ++rank) {
      const std::uint64_t* v = &all[(static_cast<std::size_t>(rank) * r.sites.size() + i) * 4];
      s.measured.push_back({v[0], v[1], v[2], v[3]});
    }
    if (auto why = volume_mismatch(s); why && r.volume_error.empty()) r.volume_error = *why;
  }
}

LayerRecord LayerRun::run() {
  LayerRecord r = blank_record();
  layer_.setup(ctx_);
  engine_->synchronize();
  probe(r);
  time_iterations(r);
  return r;
}

// ---- step 5 and the exit paths -----------------------------------------------------------

// Appends the record to the -O file (rank 0); false, with one line, when it cannot.
bool append_to_results(const LayerRecord& r, const nlohmann::json& record,
                       results::ResultsFile& h5) {
  try {
    h5.append_layer(record);
    h5.close();
    return true;
  } catch (const std::exception& e) {
    std::cerr << r.program << ": error: " << e.what() << std::endl;
    return false;
  }
}

int report(const LayerRecord& r, const LayerOptions& o, program::JsonLines& json,
           results::ResultsFile* h5) {
  const auto record = to_json(r);
  const std::string line = record.dump();
  if (o.format == bench::OutputFormat::table) print_table(std::cout, r);
  else std::cout << line << std::endl;
  if (h5 && !append_to_results(r, nlohmann::json(record), *h5)) return kExitRuntime;
  json.write(line);
  if (!json.finish(r.program)) return kExitRuntime;
  return r.passed() ? kExitOk : kExitVerifyFailed;
}

// Why the record's times may not be trusted: under the table's title in table format, on
// stderr beside JSON lines.
void print_warnings(const Prepared& p, const std::vector<std::string>& warnings) {
  if (p.options.format != bench::OutputFormat::table) return program::print_warnings(p.description.program, warnings);
  for (const std::string& w : warnings) std::cout << "# warning: " << w << "\n";
  std::cout << std::flush;
}

int run_layer(std::unique_ptr<Layer>& layer, const Prepared& p, int argc, char** argv) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  program::JsonLines json = program::JsonLines::open_on_root(p.options.json_path, MPI_COMM_WORLD);
  // -O: opened on rank 0 once every input is known good; a bad file fails on all ranks.
  const results::RunAttributes attributes = results::collect_run_attributes(argc, argv, MPI_COMM_WORLD);
  std::unique_ptr<results::ResultsFile> h5;
  if (!p.options.output_path.empty())
    h5 = results::open_results_on_root(p.options.output_path, attributes, MPI_COMM_WORLD);
  program::Watchdog watchdog(p.options.timeout_s, rank, std::string(p.description.program));
  set_wait_policy(p.options.device.wait);
  LayerRun run(*layer, p, MPI_COMM_WORLD);
  if (rank == 0) print_warnings(p, attributes.machine.warnings);  // once every input is known good
  const LayerRecord r = run.run();
  int code = rank == 0 ? report(r, p.options, json, h5.get()) : kExitOk;
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);  // every rank exits alike
  layer.reset();  // its arrays go back to the engine before the engine goes
  run.finish();
  return code;
}

}  // namespace

int layer_main(const LayerDescription& description, std::unique_ptr<Layer> layer, int argc,
               char** argv) {
  return program::run_mpi_program(description.program, argc, argv, [&](int rank, int nranks) {
    use_one_blas_thread();
    LayerOptions options = parse_layer_options(*layer, description, argc, argv);
    if (options.show_help) {
      if (rank == 0) std::cout << options.help_text;
      return static_cast<int>(kExitOk);
    }
    const Prepared p = prepare(*layer, description, std::move(options), nranks);
    return run_layer(layer, p, argc, argv);
  });
}

}  // namespace collscope::layers
