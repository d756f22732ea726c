// --gbench and Google Benchmark's own flags (--benchmark_*), which collscope reads itself
// before CLI11 sees the rest of the command line: it checks their values (bad input is
// one line and exit 2, where the library would print its usage and exit 0 on every
// rank), refuses the flags that would let the ranks run different iteration counts or
// different orders (min_time, min_warmup_time, random interleaving), and hands the
// library a command line that states every flag it relies on, so that the BENCHMARK_*
// environment variables change nothing. docs/timing.md says what --gbench does.
#pragma once

#include <string>
#include <vector>

namespace collscope::bench {

struct GbenchOptions {
  bool on = false;        // --gbench
  int repetitions = 9;    // --benchmark_repetitions (compare.py's U test wants 9 or more)
  std::string format = "console";   // --benchmark_format: rank 0's stdout
  std::string out;                  // --benchmark_out: rank 0 writes it (FILE.tmp, renamed)
  std::string out_format = "json";  // --benchmark_out_format
  std::string filter;               // --benchmark_filter, applied by collscope ("": all)
  std::string time_unit = "us";     // --benchmark_time_unit: ns, us, ms or s
  bool list_tests = false;          // --benchmark_list_tests: print the names, run nothing
  // The console report: in colour (--benchmark_color; off by default, as mpirun gives
  // rank 0 a terminal whatever stdout is), counters as columns (--benchmark_counters_tabular).
  bool color = false;
  bool counters_tabular = false;
  // Flags that only shape rank 0's report, passed on as given: aggregates only, context.
  std::vector<std::string> report_flags;
};

// Every --benchmark_* argument of argv, in order, moved into `flags`; the rest (argv[0]
// first) is returned for CLI11.
std::vector<const char*> take_gbench_flags(int argc, const char* const* argv,
                                           std::vector<std::string>& flags);

// The flags checked and parsed; `on`: whether --gbench was given. Throws UsageError.
GbenchOptions parse_gbench_flags(const std::vector<std::string>& flags, bool on);

// The command line Google Benchmark's Initialize gets: argv0, then every flag it reads
// stated explicitly (the output file only on rank 0, as `out_path`: "" for none).
std::vector<std::string> gbench_command_line(const GbenchOptions& o, const std::string& argv0,
                                             const std::string& out_path);

// Whether --benchmark_filter selects a benchmark of this full name, as the library's own
// filter does: an extended regular expression found anywhere in the name, or, after a
// leading '-', not found; "" and "all" select every benchmark.
bool gbench_filter_selects(const std::string& filter, const std::string& full_name);

}  // namespace collscope::bench
