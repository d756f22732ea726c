// The command line every benchmark binary shares (nccl-tests conventions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collscope/bench/gbench_flags.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/types.hpp"
#include "collscope/verify/splits.hpp"
#include "collscope/wait_policy.hpp"

namespace CLI {
class App;
}

namespace collscope::bench {

// How a row is timed (--timing): each call after a barrier, or -n calls back to back.
enum class Timing { call, loop };
// How the ranks' times of one timed value combine (--ranks, nccl-tests' -a): the slowest
// rank's (the default), their average (IMB's t_avg, OSU's average) or the fastest rank's.
enum class RankCombine { max, avg, min };

// What stdout gets (--format): the nccl-tests-like table, or one JSON line per row.
enum class OutputFormat { table, jsonl };

std::string_view timing_name(Timing t);
// --format's value; UsageError "--format must be table or jsonl, got '<text>'".
OutputFormat parse_output_format(const std::string& text);
std::string_view rank_combine_name(RankCombine r);
// The ranks' times combined; `times` holds one value per rank and is not empty.
double combine_ranks(std::span<const double> times, RankCombine how);

struct Options {
  std::size_t min_bytes = 64;
  std::size_t max_bytes = std::size_t{16} << 20;
  int step_factor = 4;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  std::vector<DataType> dtypes{DataType::float32};
  std::vector<ReduceOp> ops{ReduceOp::sum};
  bool all_ops = false;  // -o all: skip (dtype, op) pairs that are invalid, not an error
  int root = 0;
  TransportKind transport = TransportKind::mpi;
  MemoryKind memory = MemoryKind::host;
  // Device memory: how buffers cross ranks (nullopt: cuda_aware where the library takes
  // device pointers, else staged), the GPU of each local rank, the staged path's chunk.
  std::optional<DevicePath> path;
  std::vector<int> device_map;
  std::size_t stage_chunk = std::size_t{1} << 20;
  bool stage_chunk_given = false;  // on the command line (it applies to the staged path only)
  // Where the host waits for the GPU or a device path's transport: spin, yield or block
  // (wait_policy.hpp); given: on the command line (it applies to -m device only).
  WaitPolicy wait = WaitPolicy::spin;
  bool wait_given = false;
  // The ipc path: the copy out of a peer's memory, and whether consumed receives are
  // reduced straight from the sender's memory (--no-fuse: copied first).
  IpcCopy ipc_copy = IpcCopy::automatic;
  bool ipc_copy_given = false;
  bool fuse = true;
  // How a row is timed: call (one call at a time after a barrier; the default) or loop
  // (-n calls back to back, their average, as nccl-tests times; docs/timing.md sets it
  // beside IMB and OSU). ranks: how the ranks' times combine (the slowest rank's by
  // default; nccl-tests averages them). graph_calls > 0: N calls captured in a CUDA
  // graph, replayed per timed iteration. blocking: each call completes before the next.
  Timing timing = Timing::call;
  RankCombine ranks = RankCombine::max;
  int graph_calls = 0;
  bool blocking = false;
  OutputFormat format = OutputFormat::table;
  bool format_given = false;  // --format on the command line (--gbench owns stdout)
  std::string json_path;
  std::string output_path;  // -O: HDF5 results file to append to
  std::string model_path;   // --model: cost model file (collectives/model/MODEL.md)
  double timeout_s = 0;  // 0: no watchdog
  bool in_place = false;
  std::size_t segment_bytes = std::size_t{1} << 20;
  bool segment_given = false;  // --segment on the command line (vendor rows: see identify.hpp)
  std::size_t scratch_limit = std::size_t{8} << 30;
  std::uint64_t seed = 1;
  verify::SplitPattern split = verify::SplitPattern::uniform;  // all-to-all-v split pattern
  std::string split_file;  // all-to-all-v split matrix from a file (overrides -b/-e)
  // --vendor-volume: the MPI library counts each probe call's traffic (Open MPI's pml
  // monitoring through MPI_T, collscope/mpi_monitoring.hpp): a vendor row's volume, and
  // a second witness of a hand-written row's counted volume. Off by default: loading the
  // monitoring slows every message of the run, small calls by more than 3%
  // (docs/vendor-volume.md has the figures).
  bool vendor_volume = false;
  // --mca NAME=VALUE (repeatable): Open MPI's MCA parameter NAME for this run, set as
  // OMPI_MCA_NAME in the process's environment before MPI_Init (where Open MPI reads it):
  // what `mpirun --mca NAME VALUE` does, for launchers without --mca (srun, a sweep's
  // task line). Other MPI libraries ignore the variables. Pairs in the order given.
  std::vector<std::pair<std::string, std::string>> mca_params;
  // A row is noisy when its relative interquartile range passes this (program/stats.hpp);
  // round: the sweep round its rows belong to (-1: none), for sweeps repeated in rounds.
  double noise_threshold = 0.2;
  int round = -1;
  // --gbench: Google Benchmark runs the timed part of each case (repetitions, aggregates,
  // its reporters on rank 0; bench/gbench.hpp, docs/timing.md).
  GbenchOptions gbench;
  bool show_help = false;
  std::string help_text;
};

// Whether these options make the process run threads besides the main one: the
// watchdog (--timeout), the GPU libraries' (-m device) or UCX's (-t ucx). Only then is
// MPI asked for more than MPI_THREAD_SINGLE (mpi_program.hpp).
bool runs_other_threads(const Options& o);

// "64", "1K", "16M", "1G", "2T" (powers of 1024; an optional trailing B or iB).
// Throws UsageError for anything else, negatives and overflow included.
std::size_t parse_size(std::string_view text, std::string_view flag);

// The message sizes of a sweep: min, min*f, ... up to max (max itself always included).
std::vector<std::size_t> sweep_sizes(const Options& o);

// -b -e -f -n -w -c, --noise-threshold and --round, which pingpong shares: their text, the help's words for them, and
// the flags added to `app` then parsed into `o` (with --check first, then the sizes).
// Throws UsageError.
struct SweepText {
  std::string min_bytes = "64", max_bytes = "16M";
  int check = 1;
  std::string noise_threshold = "0.2", round = "-1";
};
struct SweepHelp {
  const char* size_examples;  // "64, 1K, 16M, 1G"
  const char* iterations;     // "iterations per size"
  const char* check;          // what -c 1 compares
};
void add_sweep_options(CLI::App& app, const SweepHelp& help, SweepText& text, Options& o);
void apply_sweep_options(const SweepText& text, Options& o);
// --noise-threshold's value (above 0, at most 10) and --round's (a whole number; "-1":
// none). Throw UsageError.
double parse_noise_threshold(const std::string& text);
int parse_round(const std::string& text);
// --format, -J/--json, -O/--output and --timeout, which pingpong and the layers share; the
// help's words: what -J writes ("JSON lines"), what -O appends ("the results") and what
// the watchdog aborts ("a call").
struct OutputHelp {
  const char* json;    // "JSON lines": "also write <json> to this file"
  const char* output;  // "the results to this HDF5 file": "append <output>"
};
void add_output_flags(CLI::App& app, const OutputHelp& help, std::string& format,
                      std::string& json_path, std::string& output_path);
// --timeout: "abort <call> stuck longer than this (seconds)".
void add_timeout_flag(CLI::App& app, const char* call, double& timeout_s);
// --mca's value, NAME=VALUE, as (NAME, VALUE). Throws UsageError.
std::pair<std::string, std::string> parse_mca_param(const std::string& text);

// The words of --format, -t and --path as the command line gave them ("": --path not
// given), which pingpong shares.
struct ChoiceText {
  std::string format = "table", transport = "mpi", path;
};

// The checks every binary's command line shares (sizes, iterations, format, transport,
// timeout, then the device flags'), parsing `text` into `o` on the way: each word where
// its check has always been, so that of two bad flags the same one is named. pingpong
// uses them too. Throws UsageError.
void apply_common_options(const ChoiceText& text, Options& o);

// The device flags every binary shares, as given: -m (each binary words its help) and
// --device-map, --stage-chunk, --wait, --ipc-copy, --no-fuse (add_device_flags adds
// these), parsed into `o` by read_device_flags (with whether each was given). Throws
// UsageError.
struct DeviceText {
  std::string memory = "host", device_map, stage_chunk = "1M", wait = "spin", ipc_copy = "auto";
};
void add_device_flags(CLI::App& app, DeviceText& text, bool& fuse);
void read_device_flags(const CLI::App& app, const DeviceText& text, Options& o);

// "0,0,1,1": the GPU of local rank i is entry i (wrapping). Throws UsageError.
std::vector<int> parse_device_map(std::string_view text);
// What the executor needs of the options: transport, memory, path, GPUs, stage chunk.
BackendSpec backend_spec(const Options& o);

// The checks of the device and timing flags (--path, --device-map, --stage-chunk,
// --timing, --graph, --blocking) against -m and -t, parsing --path (`path`; "": not
// given) into o.path once it is known to apply. Throws UsageError.
void apply_device_options(const std::string& path, Options& o);

// Throws UsageError with a one-line message for any bad input. `library_default` is the
// vendor library of a `_nccl` or `_mpi` binary ("nccl": -t nccl and -m device are its
// defaults), "" for a hand-written algorithm's.
Options parse_options(int argc, const char* const* argv, std::string_view program,
                      std::string_view library_default = "");

}  // namespace collscope::bench
