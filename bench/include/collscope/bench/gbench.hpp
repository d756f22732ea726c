// --gbench: the timed part of each case run by Google Benchmark.
//
// Every rank registers the same benchmarks in the same order (one per case, named
// "<binary>/<transport>/<memory>/<dtype>/<op>/<size>") with a fixed iteration count and
// repetition count and manual time, so every rank runs the same iterations; the library
// never chooses a count, never warms up by time and never shuffles. collscope does what
// the library cannot: before a case's first repetition, its probe call (counted and
// verified) and its -w warm-ups; in each iteration, the barrier, the call timed with
// collscope's clock and the ranks' times combined (--ranks), which the library gets as the
// iteration's manual time; after the last repetition, the row (-J, -O). Rank 0 reports
// through the library's reporters (--benchmark_format, --benchmark_out), the other ranks
// through one that prints nothing.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "collscope/bench/gbench_flags.hpp"

namespace collscope::bench {

// One case as the library runs it; collscope's side of it.
struct GbenchCase {
  std::string name;         // "allreduce_ring/mpi/host/float/sum/1024"
  double bytes = 0;         // the row's bytes: the bandwidth counters
  double busbw_factor = 1;  // busbw = algbw x this (nccl-tests' factors)
  // Before the first repetition: the probe call, its checks and the warm-ups. Returns
  // why the row is wrong ("" when it is not; only rank 0 knows): its repetitions are then
  // reported as errors, so that no dashboard takes a wrong result's time.
  std::function<std::string()> open;
  std::function<double()> timed_us;  // one iteration, the ranks' times combined
  std::function<void()> close;       // after the last repetition: the row
};

// The library's full name of a case's benchmark (what --benchmark_filter matches and the
// reports carry): "<name>/iterations:N/repeats:R/manual_time".
std::string gbench_full_name(const std::string& name, int iterations, int repetitions);

// The names of `names` that --benchmark_filter selects, as full names; throws UsageError
// when it selects none (checked before anything runs, on every rank alike).
std::vector<std::string> gbench_selected(const std::vector<std::string>& names,
                                         const GbenchOptions& o, int iterations);

struct GbenchRun {
  int iterations = 1;      // per repetition
  std::string program;     // the binary's name, for error messages
  std::string executable;  // argv[0], for the report's context
  std::vector<std::pair<std::string, std::string>> context;  // more of the report's context
};

// Runs the cases --benchmark_filter selects. Collective over `comm`. Throws UsageError
// when the filter selects none, and RuntimeErrorOnAllRanks when rank 0 cannot write
// --benchmark_out. Returns false (one line on stderr) when rank 0 could not put the
// --benchmark_out file in place at the end.
bool run_gbench(std::vector<GbenchCase>& cases, const GbenchOptions& o, const GbenchRun& run,
                MPI_Comm comm);

}  // namespace collscope::bench
