// The command line every layer binary shares, plus the layer's own shape flags:
//
//   -t/--transport mpi|ucx|nccl   --pass forward|backward|both   -d/--dtype float32|bfloat16
//   --seed N   -n/--iters N   -w/--warmup N   --format table|jsonl   -J/--json FILE
//   --timeout SECONDS   --tp N, --ep N, --etp N (layers that take them)   --<collective>-alg NAME (one per
//   collective the layer calls: --allreduce-alg ring|direct|tree|dbt|halving_doubling|mpi)
//   -m/--memory host|device   --path cuda_aware|staged|ipc   --device-map LIST
//   --stage-chunk SIZE   --wait spin|yield|block   --ipc-copy auto|engine|kernel   --no-fuse
//                            the benchmarks' device flags, with their checks (bench/options.hpp)
//   --overlap                run the communication the math allows beside compute (-m device)
//
// With -m device, a shape flag the command line leaves out takes the layer's device
// default (S 4096, B 1, H 4096, F 16384, ...: GEMMs well past launch overhead), and -d
// bfloat16 unless -d is given.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/bench/options.hpp"
#include "collscope/layers/framework/layer.hpp"

namespace collscope::layers {

struct LayerOptions {
  Passes passes;
  DataType storage = DataType::float32;
  std::uint64_t seed = 1;
  int iters = 10;
  int warmup = 2;
  bench::OutputFormat format = bench::OutputFormat::table;
  std::string json_path;
  std::string output_path;  // -O: append the record to this HDF5 results file
  double timeout_s = 0;
  int tp = 0;  // 0: the layer's default
  int ep = 0;  // 0: every rank (layers with --ep)
  int etp = 1;
  std::map<Collective, std::string> algorithm_names;  // as --<collective>-alg gave them
  // -t, -m, --path, --device-map, --stage-chunk, --wait, --ipc-copy, --no-fuse: the
  // benchmarks' fields (its transport, memory and device ones only).
  bench::Options device;
  bool overlap = false;   // --overlap
  double noise_threshold = 0.2;  // --noise-threshold (program/stats.hpp)
  int round = -1;                // --round: the sweep round of the record, -1 none
  MemoryKind memory() const { return device.memory; }
  TransportKind transport() const { return device.transport; }
  LayerShape shape;  // what the layer's own flags make of it (Layer::read_options)
  bool show_help = false;
  std::string help_text;
};

// The default algorithm of each collective: the ring where there is one, else the
// simplest hand-written schedule (pairwise all-to-all(-v), binomial broadcast, linear
// scatter and gather). Its name is the default of the --<collective>-alg flag.
std::string_view default_algorithm_name(Collective collective);
const Algorithm& default_algorithm(Collective collective);

// Throws UsageError (one line) for anything malformed; needs no communication.
// `description` is the layer's (pipelines/catalogue.hpp).
LayerOptions parse_layer_options(Layer& layer, const LayerDescription& description, int argc,
                                 const char* const* argv);

// The backend of every group's communicator (collscope/runtime/backend.hpp).
BackendSpec backend_spec(const LayerOptions& o);

// The layout the flags ask for at `world` ranks (not yet checked: config_violation).
ParallelConfig parallel_config(const LayerDescription& description, const LayerOptions& o,
                               int world);

// The algorithm of each collective the layer calls. Throws UsageError for a name the
// table does not have.
AlgorithmChoice resolve_algorithms(const LayerDescription& description, const LayerOptions& o);

}  // namespace collscope::layers
