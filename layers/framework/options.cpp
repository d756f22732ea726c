#include "collscope/layers/framework/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <stdexcept>

#include "collscope/errors.hpp"
#include "collscope/program/mpi_program.hpp"

namespace collscope::layers {
namespace {

std::string flag_of(Collective collective) {
  std::string flag = "--" + std::string(collective_name(collective)) + "-alg";
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string algorithm_list(Collective collective) {
  std::string s;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == collective && !a.needs_device()) s += (s.empty() ? "" : " ") + std::string(a.name);
  return s;
}

Passes parse_passes(const std::string& text) {
  if (text == "forward") return {true, false};
  if (text == "backward") return {false, true};
  if (text == "both") return {true, true};
  throw UsageError("--pass must be forward, backward or both, got '" + text + "'");
}

DataType parse_storage(const std::string& text) {
  const auto t = parse_dtype(text);
  if (!t || !is_storage_dtype(*t))
    throw UsageError("--dtype must be float32 (float) or bfloat16, got '" + text + "'");
  return *t;
}

// -t and --format as given, before they are parsed.
struct ChoiceFlags {
  std::string transport = "mpi", format = "table";
};

// -t against -m: NCCL moves GPU memory only. Checked before any group is split, on every
// rank alike.
TransportKind parse_transport(const std::string& text, MemoryKind memory) {
  const bool device = memory == MemoryKind::device;
  const std::optional<TransportKind> kind = transport_kind(text);
  if (kind == TransportKind::nccl && !device)
    throw UsageError("-t nccl moves GPU memory (-m device); with -m host the layers keep their "
                     "tensors in host memory: -t must be mpi or ucx");
  if (!kind)
    throw UsageError("unknown transport '" + text + "' (expected mpi or ucx" +
                     (device ? std::string(", or nccl") : std::string()) + ")");
  return *kind;
}

// `path`: --path as given ("": not given), parsed with the device flags' checks.
void check_common(const ChoiceFlags& choices, const std::string& path, LayerOptions& o) {
  if (o.iters < 1) throw UsageError("--iters must be at least 1, got " + std::to_string(o.iters));
  if (o.warmup < 0) throw UsageError("--warmup must be at least 0, got " + std::to_string(o.warmup));
  o.format = bench::parse_output_format(choices.format);
  o.device.transport = parse_transport(choices.transport, o.memory());
  bench::apply_device_options(path, o.device);
  if (o.overlap && o.memory() != MemoryKind::device)
    throw UsageError("--overlap needs -m device (on host memory a collective runs on the "
                     "calling thread: nothing runs beside it)");
  if (!(o.timeout_s >= 0)) throw UsageError("--timeout must be >= 0 seconds");
  if (o.tp < 0) throw UsageError("--tp must be at least 1, got " + std::to_string(o.tp));
  if (o.ep < 0) throw UsageError("--ep must be at least 1, got " + std::to_string(o.ep));
  if (o.etp < 1) throw UsageError("--etp must be at least 1, got " + std::to_string(o.etp));
}

// The command line's device flags, as the benchmarks spell them.
struct DeviceFlags {
  bench::DeviceText text;
  std::string path;
};

void add_device_options(CLI::App& app, LayerOptions& o, DeviceFlags& f) {
  app.add_option("-m,--memory", f.text.memory,
                 "host (OpenBLAS, host memory) or device (cuBLAS and kernels on the GPU; the "
                 "emulated device with COLLSCOPE_DEVICE_EMULATION=1)");
  app.add_option("--path", f.path,
                 "device memory over -t mpi|ucx: cuda_aware, staged or ipc (default: cuda_aware "
                 "where the library takes device pointers, else staged)");
  bench::add_device_flags(app, f.text, o.device.fuse);
  app.add_flag("--overlap", o.overlap,
               "-m device: run the communication the math allows on its stream beside "
               "independent compute (the TP blocks' input-gradient collective beside the "
               "weight-gradient GEMMs, DP buckets, MoE chunks)");
}


// --noise-threshold and --round, as the benchmarks spell and check them.
struct SpreadFlags {
  std::string noise_threshold = "0.2", round = "-1";
};

void add_common_options(CLI::App& app, LayerOptions& o, ChoiceFlags& choices, std::string& pass,
                        std::string& dtype, SpreadFlags& spread) {
  app.add_option("-t,--transport", choices.transport, "mpi or ucx; nccl with -m device");
  app.add_option("--pass", pass, "forward, backward or both");
  app.add_option("-d,--dtype", dtype, "storage dtype: float32 or bfloat16 (compute is float32)");
  app.add_option("--seed", o.seed, "seed of the generated inputs and weights");
  app.add_option("-n,--iters", o.iters, "timed iterations");
  app.add_option("-w,--warmup", o.warmup, "untimed iterations before them");
  bench::add_output_flags(app, {"the JSON-lines record", "the record to this HDF5 results file"},
                          choices.format, o.json_path, o.output_path);
  bench::add_timeout_flag(app, "a collective", o.timeout_s);
  app.add_option("--noise-threshold", spread.noise_threshold,
                 "flag the record noisy when its interquartile range passes this share of its "
                 "median (default 0.2; from 0 to 10)");
  app.add_option("--round", spread.round, "the sweep round of the record (a whole number)");
}

}  // namespace

std::string_view default_algorithm_name(Collective collective) {
  switch (collective) {
    case Collective::alltoall:
    case Collective::alltoallv: return "pairwise";
    case Collective::broadcast: return "binomial";
    case Collective::gather:
    case Collective::scatter: return "linear";
    default: return "ring";
  }
}

const Algorithm& default_algorithm(Collective collective) {
  const Algorithm* a = find_algorithm(collective, default_algorithm_name(collective));
  if (!a)
    throw std::logic_error("no " + std::string(default_algorithm_name(collective)) + " " +
                           std::string(collective_name(collective)) + " in the algorithm table");
  return *a;
}

LayerOptions parse_layer_options(Layer& layer, const LayerDescription& description, int argc,
                                 const char* const* argv) {
  LayerOptions o;
  const std::string program(description.program);
  CLI::App app{"collscope " + program + ": " + std::string(description.summary), program};
  std::string pass = "both", dtype = "float32";
  SpreadFlags spread;
  ChoiceFlags choices;
  add_common_options(app, o, choices, pass, dtype, spread);
  const DegreeFlags& degrees = description.degrees;
  if (degrees.tp)
    app.add_option("--tp", o.tp,
                   degrees.tp_defaults_to_world ? "TP degree (default: all ranks)"
                                                : "TP degree (default 1)");
  if (degrees.ep)
    app.add_option("--ep", o.ep, "expert-parallel degree EP (default: all ranks / ETP)");
  if (degrees.etp)
    app.add_option("--etp", o.etp, "expert tensor-parallel degree ETP (default 1)");
  for (Collective c : description.collectives) {
    o.algorithm_names[c] = default_algorithm_name(c);
    app.add_option(flag_of(c), o.algorithm_names[c],
                   "algorithm of every " + std::string(collective_name(c)) + ": " +
                       algorithm_list(c) + " (mpi: the vendor's, bytes not measured)");
  }
  DeviceFlags device;
  add_device_options(app, o, device);
  layer.add_options(app);
  app.set_help_flag("-h,--help", "print this help and exit");
  if (!program::parse_command_line(app, argc, argv, o.help_text)) {
    o.show_help = true;
    return o;
  }
  bench::read_device_flags(app, device.text, o.device);
  o.noise_threshold = bench::parse_noise_threshold(spread.noise_threshold);
  o.round = bench::parse_round(spread.round);
  o.passes = parse_passes(pass);
  if (o.memory() == MemoryKind::device) {
    if (app.count("--dtype") == 0) dtype = "bfloat16";
    layer.use_device_defaults(app);
  }
  o.storage = parse_storage(dtype);
  check_common(choices, device.path, o);
  o.shape = layer.read_options();
  return o;
}

ParallelConfig parallel_config(const LayerDescription& description, const LayerOptions& o,
                               int world) {
  const DegreeFlags& degrees = description.degrees;
  ParallelConfig c;
  c.world = world;
  c.tp = o.tp > 0 ? o.tp : degrees.tp_defaults_to_world ? world : 1;
  c.etp = o.etp;
  if (degrees.ep) c.ep = o.ep > 0 ? o.ep : std::max(1, world / c.etp);
  return c;
}

AlgorithmChoice resolve_algorithms(const LayerDescription& description, const LayerOptions& o) {
  AlgorithmChoice out;
  for (Collective c : description.collectives) {
    const std::string& name = o.algorithm_names.at(c);
    const Algorithm* a = find_algorithm(c, name);
    if (!a || a->needs_device())  // NCCL's own collectives are not among the layers' choices
      throw UsageError("unknown " + flag_of(c) + " '" + name + "' (expected one of: " +
                       algorithm_list(c) + ")");
    if (a->is_vendor() && o.memory() == MemoryKind::device)
      throw UsageError(flag_of(c) + " " + name + " runs the MPI library's own collective on host "
                       "buffers: use a hand-written algorithm with -m device");
    out[c] = a;
  }
  return out;
}

BackendSpec backend_spec(const LayerOptions& o) { return bench::backend_spec(o.device); }

}  // namespace collscope::layers
