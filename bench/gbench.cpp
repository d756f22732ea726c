#include "collscope/bench/gbench.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <ostream>

#include "collscope/errors.hpp"
#include "collscope/program/stats.hpp"

namespace collscope::bench {
namespace {

// The reporter of every rank but 0: the runs happen, nothing is printed.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  SilentReporter() {
    SetOutputStream(&nowhere_);
    SetErrorStream(&nowhere_);
  }
  bool ReportContext(const Context&) override { return true; }  // false would run nothing
  void ReportRuns(const std::vector<Run>&) override {}

 private:
  std::ostream nowhere_{nullptr};  // no buffer: every write is dropped
};

// The statistics over the repetitions besides the library's mean, median, stddev and cv:
// the quartiles as collscope computes them everywhere (program/stats.hpp), min and max.
double p25_of(const std::vector<double>& v) { return program::stats_of(v).p25; }
double p75_of(const std::vector<double>& v) { return program::stats_of(v).p75; }
double min_of(const std::vector<double>& v) { return program::stats_of(v).min; }
double max_of(const std::vector<double>& v) { return program::stats_of(v).max; }

// Rank 0's display reporter, as --benchmark_format says. Made here, not by the library,
// whose default one is a static it deletes after the run (a second run would reuse it).
std::unique_ptr<benchmark::BenchmarkReporter> display_reporter(const GbenchOptions& o) {
  if (o.format == "json") return std::make_unique<benchmark::JSONReporter>();
  if (o.format == "csv") {
    BENCHMARK_DISABLE_DEPRECATED_WARNING  // the library keeps CSV, marked deprecated
    return std::make_unique<benchmark::CSVReporter>();
    BENCHMARK_RESTORE_DEPRECATED_WARNING
  }
  int opts = benchmark::ConsoleReporter::OO_None;
  if (o.color) opts |= benchmark::ConsoleReporter::OO_Color;
  if (o.counters_tabular) opts |= benchmark::ConsoleReporter::OO_Tabular;
  return std::make_unique<benchmark::ConsoleReporter>(
      static_cast<benchmark::ConsoleReporter::OutputOptions>(opts));
}

benchmark::TimeUnit time_unit(const std::string& name) {
  if (name == "ns") return benchmark::kNanosecond;
  if (name == "ms") return benchmark::kMillisecond;
  if (name == "s") return benchmark::kSecond;
  return benchmark::kMicrosecond;
}

// A registered case and how many of its repetitions have run.
struct Progress {
  GbenchCase* c = nullptr;
  int repetitions = 1;
  int done = 0;
  std::string wrong;  // from open(): why every repetition is reported as an error
};

// One repetition: the case opened before the first, closed after the last (the library
// runs an instance's repetitions one after the other, as it does not interleave here).
void run_repetition(benchmark::State& state, Progress& p) {
  if (p.done == 0) p.wrong = p.c->open();
  for (auto _ : state) state.SetIterationTime(p.c->timed_us() * 1e-6);
  // Rates in bytes per second of manual time, that is of collscope's times (the console
  // prints them with SI prefixes, 1 G = 1e9 as in nccl-tests' GB/s; bytes_per_second is
  // algbw under the library's own name, which its console prints in powers of 1024).
  const double n = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(p.c->bytes * n));
  state.counters["bytes"] = p.c->bytes;
  state.counters["algbw"] = benchmark::Counter(p.c->bytes * n, benchmark::Counter::kIsRate);
  state.counters["busbw"] =
      benchmark::Counter(p.c->bytes * p.c->busbw_factor * n, benchmark::Counter::kIsRate);
  if (!p.wrong.empty()) state.SkipWithError(p.wrong.c_str());
  if (++p.done == p.repetitions) p.c->close();
}

// Rank 0 makes sure it can write --benchmark_out (as FILE.tmp) before anything runs, so
// that the library never finds out in the middle of a collective run; every rank learns.
std::string open_out_on_root(const GbenchOptions& o, bool root, MPI_Comm comm) {
  int ok = 1;
  const std::string tmp = o.out.empty() ? "" : o.out + ".tmp";
  if (root && !tmp.empty()) ok = std::ofstream(tmp, std::ios::trunc).good() ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) throw RuntimeErrorOnAllRanks("cannot write the Google Benchmark file '" + o.out + "'");
  return root ? tmp : "";
}

// The library's Initialize with collscope's command line for it (gbench_flags.hpp). The
// library keeps a pointer to argv[0] (the report's executable): `args` must outlive the run.
void initialize(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  benchmark::Initialize(&argc, argv.data());
}

}  // namespace

std::string gbench_full_name(const std::string& name, int iterations, int repetitions) {
  return name + "/iterations:" + std::to_string(iterations) + "/repeats:" +
         std::to_string(repetitions) + "/manual_time";
}

std::vector<std::string> gbench_selected(const std::vector<std::string>& names,
                                         const GbenchOptions& o, int iterations) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    std::string full = gbench_full_name(n, iterations, o.repetitions);
    if (gbench_filter_selects(o.filter, full)) out.push_back(std::move(full));
  }
  if (out.empty())
    throw UsageError("--benchmark_filter '" + o.filter + "' selects none of the " +
                     std::to_string(names.size()) + " benchmarks (e.g. " +
                     gbench_full_name(names.front(), iterations, o.repetitions) + ")");
  return out;
}

bool run_gbench(std::vector<GbenchCase>& cases, const GbenchOptions& o, const GbenchRun& run,
                MPI_Comm comm) {
  const int iterations = run.iterations;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool root = rank == 0;
  std::vector<std::string> names;
  for (const GbenchCase& c : cases) names.push_back(c.name);
  gbench_selected(names, o, iterations);
  std::vector<Progress> selected;
  for (GbenchCase& c : cases)
    if (gbench_filter_selects(o.filter, gbench_full_name(c.name, iterations, o.repetitions)))
      selected.push_back({&c, o.repetitions, 0, {}});
  const std::string out_path = open_out_on_root(o, root, comm);
  std::vector<std::string> args = gbench_command_line(o, run.executable, out_path);
  initialize(args);
  if (root)
    for (const auto& [key, value] : run.context) benchmark::AddCustomContext(key, value);
  for (Progress& p : selected)
    benchmark::RegisterBenchmark(p.c->name.c_str(), [&p](benchmark::State& s) { run_repetition(s, p); })
        ->Iterations(iterations)
        ->Repetitions(o.repetitions)
        ->UseManualTime()
        ->Unit(time_unit(o.time_unit))
        ->ComputeStatistics("p25", p25_of)
        ->ComputeStatistics("p75", p75_of)
        ->ComputeStatistics("min", min_of)
        ->ComputeStatistics("max", max_of);
  SilentReporter silent;
  const std::unique_ptr<benchmark::BenchmarkReporter> display = root ? display_reporter(o) : nullptr;
  // The file reporter (--benchmark_out, rank 0 only) is the library's own.
  benchmark::RunSpecifiedBenchmarks(root ? display.get() : &silent);
  // No benchmark::Shutdown(): in 1.7.1 it deletes the custom context without forgetting
  // it, so a second run in the process (the tests) would write into freed memory.
  benchmark::ClearRegisteredBenchmarks();
  if (out_path.empty()) return true;
  if (std::rename(out_path.c_str(), o.out.c_str()) == 0) return true;
  std::fprintf(stderr, "%s: error: cannot rename '%s' to '%s'\n", run.program.c_str(),
               out_path.c_str(), o.out.c_str());
  return false;
}

}  // namespace collscope::bench
