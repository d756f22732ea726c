#include "collscope/bench/options.hpp"
#include "collscope/program/mpi_program.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "collscope/enum_names.hpp"
#include "collscope/errors.hpp"
#include "collscope/size_text.hpp"

namespace collscope::bench {
namespace {

std::string dtype_list() {
  std::string s;
  for (DataType t : kAllDataTypes) s += std::string(dtype_name(t)) + " ";
  return s + "all";
}

std::vector<DataType> parse_dtypes(const std::string& text) {
  if (text == "all") return {std::begin(kAllDataTypes), std::end(kAllDataTypes)};
  if (auto t = parse_dtype(text)) return {*t};
  throw UsageError("unknown dtype '" + text + "' (expected one of: " + dtype_list() + ")");
}

std::vector<ReduceOp> parse_ops(const std::string& text) {
  if (text == "all") return {std::begin(kAllReduceOps), std::end(kAllReduceOps)};
  if (auto op = parse_op(text)) return {*op};
  throw UsageError("unknown op '" + text + "' (expected one of: sum prod max min avg all)");
}

// The names of each choice's values, in the order of its enum.
constexpr std::string_view kTimingNames[] = {"call", "loop"};
constexpr std::string_view kRankCombineNames[] = {"max", "avg", "min"};
constexpr std::string_view kFormatNames[] = {"table", "jsonl"};

// The value `text` names; else UsageError: "<must_be>, got '<text>'".
template <class E, std::size_t N>
E parse_choice(const std::string& text, const std::string_view (&names)[N], const char* must_be) {
  if (auto value = by_name<E>(text, names)) return *value;
  throw UsageError(std::string(must_be) + ", got '" + text + "'");
}

void check_positive(int value, const char* flag, int min) {
  if (value < min)
    throw UsageError(std::string(flag) + " must be at least " + std::to_string(min) +
                     ", got " + std::to_string(value));
}

// The library can count only what goes through it: an MPI transport on host memory for
// hand-written algorithms; never NCCL's collectives.
void validate_vendor_volume(const Options& o, std::string_view library, bool given) {
  if (!o.vendor_volume || !given) return;
  if (library == "nccl")
    throw UsageError("--vendor-volume counts through MPI; NCCL's own collectives are invisible to it");
  if (library.empty() && (o.transport != TransportKind::mpi || o.memory != MemoryKind::host))
    throw UsageError("--vendor-volume witnesses what the MPI library sends: it needs -t mpi on "
                     "host memory (-t " + std::string(transport_name(o.transport)) + " -m " +
                     std::string(memory_name(o.memory)) + " moves bytes it does not see)");
}

verify::SplitPattern parse_split(const std::string& text) {
  if (auto p = verify::parse_split_pattern(text)) return *p;
  throw UsageError("--split must be uniform, random or skewed, got '" + text + "'");
}

TransportKind parse_transport(const std::string& text) {
  if (auto t = transport_kind(text)) return *t;
  throw UsageError("unknown transport '" + text + "' (expected mpi, ucx or nccl)");
}

std::optional<DevicePath> parse_path_option(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (auto p = parse_path(text)) return p;
  throw UsageError("--path must be cuda_aware, staged or ipc, got '" + text + "'");
}

// The collective binaries' checks; --split is parsed after --root is checked.
void apply_all_options(const ChoiceText& text, const std::string& split, Options& o) {
  apply_common_options(text, o);
  check_positive(o.root, "--root", 0);
  o.split = parse_split(split);
  if (o.segment_bytes == 0) throw UsageError("--segment must be at least 1 byte");
  if (!o.all_ops)
    for (DataType t : o.dtypes)
      for (ReduceOp op : o.ops)
        if (!op_valid_for(op, t))
          throw UsageError("op '" + std::string(op_name(op)) + "' is not defined for dtype '" +
                           std::string(dtype_name(t)) + "' (avg needs a floating type)");
}

// --gbench against the flags it cannot serve beside.
void check_gbench_options(const Options& o) {
  if (!o.gbench.on) return;
  if (o.graph_calls > 0)
    throw UsageError("--gbench times calls (or -n calls back to back), not graph replays: drop --graph");
  if (o.format_given)
    throw UsageError("--gbench gives stdout to Google Benchmark (--benchmark_format); "
                     "collscope's rows go to -J and -O: drop --format");
}

}  // namespace

std::string_view timing_name(Timing t) { return name_of(t, kTimingNames); }

OutputFormat parse_output_format(const std::string& text) {
  return parse_choice<OutputFormat>(text, kFormatNames, "--format must be table or jsonl");
}

std::string_view rank_combine_name(RankCombine r) { return name_of(r, kRankCombineNames); }

double combine_ranks(std::span<const double> times, RankCombine how) {
  switch (how) {
    case RankCombine::max: return *std::max_element(times.begin(), times.end());
    case RankCombine::min: return *std::min_element(times.begin(), times.end());
    case RankCombine::avg: break;
  }
  return std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
}

bool runs_other_threads(const Options& o) {
  return o.timeout_s > 0 || o.memory == MemoryKind::device || o.transport != TransportKind::mpi;
}

void apply_common_options(const ChoiceText& text, Options& o) {
  if (o.min_bytes > o.max_bytes)
    throw UsageError("--min-bytes (" + std::to_string(o.min_bytes) +
                     ") is larger than --max-bytes (" + std::to_string(o.max_bytes) + ")");
  if (o.step_factor < 2 && o.min_bytes != o.max_bytes)
    throw UsageError("--step-factor must be at least 2");
  check_positive(o.iters, "--iters", 1);
  check_positive(o.warmup, "--warmup", 0);
  o.format = parse_output_format(text.format);
  o.transport = parse_transport(text.transport);
  if (!(o.timeout_s >= 0)) throw UsageError("--timeout must be >= 0 seconds");
  apply_device_options(text.path, o);
}

void add_sweep_options(CLI::App& app, const SweepHelp& help, SweepText& text, Options& o) {
  app.add_option("-b,--min-bytes", text.min_bytes,
                 "smallest message size (" + std::string(help.size_examples) + ")");
  app.add_option("-e,--max-bytes", text.max_bytes, "largest message size");
  app.add_option("-f,--step-factor", o.step_factor, "multiply the size by this each step");
  app.add_option("-n,--iters", o.iters, "timed " + std::string(help.iterations));
  app.add_option("-w,--warmup", o.warmup, "untimed " + std::string(help.iterations));
  app.add_option("-c,--check", text.check, help.check);
  app.add_option("--noise-threshold", text.noise_threshold,
                 "flag a row noisy when its interquartile range passes this share of its median "
                 "(default 0.2; from 0 to 10)");
  app.add_option("--round", text.round, "the sweep round these rows belong to (a whole number; "
                 "recorded in every row)");
}

void add_output_flags(CLI::App& app, const OutputHelp& help, std::string& format,
                      std::string& json_path, std::string& output_path) {
  app.add_option("--format", format, "stdout format: table or jsonl");
  app.add_option("-J,--json", json_path, "also write " + std::string(help.json) + " to this file");
  app.add_option("-O,--output", output_path, "append " + std::string(help.output));
}

void add_timeout_flag(CLI::App& app, const char* call, double& timeout_s) {
  app.add_option("--timeout", timeout_s,
                 "abort " + std::string(call) + " stuck longer than this (seconds)");
}

void apply_sweep_options(const SweepText& text, Options& o) {
  if (text.check != 0 && text.check != 1) throw UsageError("--check must be 0 or 1");
  o.check = text.check == 1;
  o.min_bytes = parse_size(text.min_bytes, "--min-bytes");
  o.max_bytes = parse_size(text.max_bytes, "--max-bytes");
  o.noise_threshold = parse_noise_threshold(text.noise_threshold);
  o.round = parse_round(text.round);
}

// "NAME=VALUE": NAME of letters, digits and '_' (an MCA parameter's name), VALUE not empty.
std::pair<std::string, std::string> parse_mca_param(const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::string name = text.substr(0, eq);
  const bool name_ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (eq == std::string::npos || !name_ok || eq + 1 == text.size())
    throw UsageError("--mca takes NAME=VALUE (an MCA parameter's name: letters, digits, '_'), "
                     "got '" + text + "'");
  return {name, text.substr(eq + 1)};
}

double parse_noise_threshold(const std::string& text) {
  const std::string bad = "--noise-threshold must be a number above 0 and at most 10, got '" + text + "'";
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw UsageError(bad);
  }
  if (used != text.size() || !(v > 0 && v <= 10)) throw UsageError(bad);
  return v;
}

int parse_round(const std::string& text) {
  if (text == "-1") return -1;  // the default: no round
  const bool digits = !text.empty() && text.size() <= 9 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) throw UsageError("--round must be a whole number (0, 1, ...), got '" + text + "'");
  return std::stoi(text);
}

void add_device_flags(CLI::App& app, DeviceText& text, bool& fuse) {
  app.add_option("--device-map", text.device_map, "GPU of each local rank, e.g. 0,1,2,3 or 0,0 "
                 "(default: local rank modulo the node's GPUs)");
  app.add_option("--stage-chunk", text.stage_chunk, "chunk of the staged path (default 1M)");
  app.add_option("--wait", text.wait, "-m device: how the host waits for the GPU and the path's "
                 "transport: spin (the default), yield (more ranks than cores) or block");
  app.add_option("--ipc-copy", text.ipc_copy, "--path ipc: the copy out of a peer's memory: auto "
                 "(the default), engine (copy engine) or kernel");
  app.add_flag("--no-fuse{false}", fuse, "--path ipc: copy a received block a reduction consumes, "
               "instead of reducing it straight from the sender's memory");
}

void read_device_flags(const CLI::App& app, const DeviceText& text, Options& o) {
  const auto mem = parse_memory(text.memory);
  if (!mem) throw UsageError("--memory must be host or device, got '" + text.memory + "'");
  o.memory = *mem;
  if (!text.device_map.empty()) o.device_map = parse_device_map(text.device_map);
  o.stage_chunk = parse_size(text.stage_chunk, "--stage-chunk");
  o.stage_chunk_given = app.count("--stage-chunk") > 0;
  const auto w = parse_wait_policy(text.wait);
  if (!w) throw UsageError("--wait must be spin, yield or block, got '" + text.wait + "'");
  o.wait = *w;
  o.wait_given = app.count("--wait") > 0;
  const auto c = parse_ipc_copy(text.ipc_copy);
  if (!c) throw UsageError("--ipc-copy must be auto, engine or kernel, got '" + text.ipc_copy + "'");
  o.ipc_copy = *c;
  o.ipc_copy_given = app.count("--ipc-copy") > 0;
}

BackendSpec backend_spec(const Options& o) {
  BackendSpec b;
  b.transport = o.transport;
  b.memory = o.memory;
  b.path = o.path;
  b.device_map = o.device_map;
  b.device.stage_chunk = o.stage_chunk;
  b.device.ipc_copy = o.ipc_copy;
  b.device.fuse = o.fuse;
  return b;
}

void apply_device_options(const std::string& path, Options& o) {
  const bool device = o.memory == MemoryKind::device;
  const bool nccl = o.transport == TransportKind::nccl;
  if (nccl && !device) throw UsageError("-t nccl moves GPU memory: it needs -m device");
  if (!device && (!path.empty() || !o.device_map.empty()))
    throw UsageError("--path and --device-map apply to -m device");
  o.path = parse_path_option(path);
  if (o.path && nccl)
    throw UsageError("--path applies to -t mpi and ucx: NCCL moves GPU memory itself");
  if (o.stage_chunk == 0) throw UsageError("--stage-chunk must be at least 1 byte");
  if (o.stage_chunk_given && (!device || nccl || (o.path && *o.path != DevicePath::staged)))
    throw UsageError("--stage-chunk applies to the staged path (-m device, --path staged or the default)");
  if (o.wait_given && !device) throw UsageError("--wait applies to -m device");
  const bool ipc = device && o.path == DevicePath::ipc;
  if ((o.ipc_copy_given || !o.fuse) && !ipc)
    throw UsageError("--ipc-copy and --no-fuse apply to -m device --path ipc");
  if (o.graph_calls < 0) throw UsageError("--graph must be at least 1 (calls per graph)");
  if (o.graph_calls > 0) {
    if (!nccl && !ipc)
      throw UsageError("--graph captures calls whose every operation is on the GPU stream: "
                       "-t nccl or --path ipc (the staged and cuda_aware paths wait for the GPU "
                       "inside a call)");
    if (o.blocking) throw UsageError("--graph and --blocking exclude each other");
    if (o.timing == Timing::loop) throw UsageError("--graph times its replays: drop --timing loop");
  }
}

std::vector<int> parse_device_map(std::string_view text) {
  std::vector<int> out;
  const std::string bad = "bad --device-map '" + std::string(text) +
                          "' (expected GPU indices by local rank, e.g. 0,1,2,3 or 0,0)";
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    int v = 0;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) {
      if (v > 100000) throw UsageError(bad);
      v = v * 10 + (text[j++] - '0');
    }
    if (j == i) throw UsageError(bad);
    out.push_back(v);
    if (j == text.size()) break;
    if (text[j] != ',' || j + 1 == text.size()) throw UsageError(bad);
    i = j + 1;
  }
  if (out.empty()) throw UsageError(bad);
  return out;
}

std::size_t parse_size(std::string_view text, std::string_view flag) {
  const auto bytes = parse_size_text(text);
  if (const auto* v = std::get_if<std::uint64_t>(&bytes)) return static_cast<std::size_t>(*v);
  throw UsageError("bad size '" + std::string(text) + "' for " + std::string(flag) +
                   " (expected e.g. 64, 1K, 16M, 1G)");
}

std::vector<std::size_t> sweep_sizes(const Options& o) {
  std::vector<std::size_t> sizes;
  std::size_t s = o.min_bytes;
  while (s < o.max_bytes) {
    sizes.push_back(s);
    if (s == 0) s = 1;  // 0 B then 1 B onwards
    else if (s > o.max_bytes / static_cast<std::size_t>(o.step_factor)) break;
    else s *= static_cast<std::size_t>(o.step_factor);
  }
  sizes.push_back(o.max_bytes);
  return sizes;
}

Options parse_options(int argc, const char* const* argv, std::string_view program,
                      std::string_view library_default) {
  Options o;
  const bool nccl_binary = library_default == "nccl";
  CLI::App app{"collscope " + std::string(program) + ": benchmark and verify one collective algorithm",
               std::string(program)};
  std::string seg = "1M", scratch = "8G";
  std::string dtype = "float", op = "sum";
  DeviceText device;
  if (nccl_binary) device.memory = "device";
  std::string timing = "call", ranks = "max";
  ChoiceText text;
  if (nccl_binary) text.transport = "nccl";
  std::string split = "uniform";
  SweepText sweep;
  add_sweep_options(app, {"64, 1K, 16M, 1G", "iterations per size",
                          "verify results and byte counts (0 or 1)"},
                    sweep, o);
  app.add_option("-d,--dtype", dtype, "data type: " + dtype_list());
  app.add_option("-o,--op", op, "reduction: sum prod max min avg all");
  app.add_option("-r,--root", o.root, "root rank of rooted collectives");
  app.add_option("-t,--transport", text.transport, "mpi, ucx or nccl");
  app.add_option("-m,--memory", device.memory, "host or device");
  app.add_option("--path", text.path,
                 "device memory over -t mpi|ucx: cuda_aware, staged or ipc (default: cuda_aware "
                 "where the library takes device pointers, else staged)");
  add_device_flags(app, device, o.fuse);
  app.add_option("--timing", timing, "call (one call after a barrier, the default) or loop "
                 "(-n calls back to back, their average)");
  app.add_option("--ranks", ranks, "how the ranks' times combine: max (the slowest rank, the "
                 "default), avg or min (nccl-tests' -a)");
  app.add_option("--graph", o.graph_calls, "capture N calls in a CUDA graph and time its replays "
                 "(-t nccl, --path ipc)");
  app.add_flag("--blocking", o.blocking, "complete each call before issuing the next");
  add_output_flags(app, {"JSON lines", "the results to this HDF5 file"}, text.format,
                   o.json_path, o.output_path);
  app.add_option("--model", o.model_path, "cost model file: predict each row's time");
  add_timeout_flag(app, "a call", o.timeout_s);
  app.add_flag("--in-place", o.in_place, "run in place (send buffer = receive buffer)");
  app.add_flag("--vendor-volume,!--no-vendor-volume", o.vendor_volume,
               "the MPI library counts each probe call's traffic (Open MPI's pml monitoring): "
               "a vendor row's volume, a witness for a hand-written row (slows small calls)");
  std::vector<std::string> mca;
  app.add_option("--mca", mca, "NAME=VALUE: Open MPI's MCA parameter for this run (as mpirun "
                 "--mca NAME VALUE; repeatable; set before MPI_Init as OMPI_MCA_NAME)")
      ->allow_extra_args(false);
  app.add_option("--segment", seg, "segment size of pipelined algorithms (tree, dbt)");
  app.add_option("--max-scratch", scratch, "scratch memory an algorithm may use per rank");
  app.add_option("--seed", o.seed, "seed of the generated data (and of split matrices)");
  app.add_option("--split", split, "all-to-all-v split pattern: uniform random skewed");
  app.add_option("--split-file", o.split_file,
                 "all-to-all-v: N x N split matrix in elements (one row per sender)");
  bool gbench = false;
  app.add_flag("--gbench", gbench, "time each case with Google Benchmark: -n iterations per "
               "repetition, its aggregates, rank 0's reports (--benchmark_repetitions=9, "
               "_format, _out, _out_format, _filter, _list_tests, _time_unit; docs/timing.md)");
  app.set_help_flag("-h,--help", "print this help and exit");
  std::vector<std::string> gbench_flags;
  const std::vector<const char*> rest = take_gbench_flags(argc, argv, gbench_flags);
  if (!program::parse_command_line(app, static_cast<int>(rest.size()), rest.data(), o.help_text)) {
    o.show_help = true;
    return o;
  }
  apply_sweep_options(sweep, o);
  for (const std::string& m : mca) o.mca_params.push_back(parse_mca_param(m));
  o.segment_bytes = parse_size(seg, "--segment");
  o.segment_given = app.count("--segment") > 0;
  o.scratch_limit = parse_size(scratch, "--max-scratch");
  o.dtypes = parse_dtypes(dtype);
  o.ops = parse_ops(op);
  o.all_ops = op == "all";
  read_device_flags(app, device, o);
  o.timing = parse_choice<Timing>(timing, kTimingNames, "--timing must be call or loop");
  o.ranks = parse_choice<RankCombine>(ranks, kRankCombineNames, "--ranks must be max, avg or min");
  o.format_given = app.count("--format") > 0;
  apply_all_options(text, split, o);
  validate_vendor_volume(o, library_default,
                         app.count("--vendor-volume") + app.count("--no-vendor-volume") > 0);
  o.gbench = parse_gbench_flags(gbench_flags, gbench);
  check_gbench_options(o);
  return o;
}

}  // namespace collscope::bench
