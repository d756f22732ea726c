#include <gtest/gtest.h>

#include <algorithm>

#include "collscope/bench/gbench_flags.hpp"
#include "collscope/bench/options.hpp"
#include "collscope/errors.hpp"

namespace collscope::bench {
namespace {

Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  return parse_options(static_cast<int>(args.size()), args.data(), "prog");
}

// The UsageError's message, or "" when none is thrown.
std::string refusal(std::vector<const char*> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(GbenchFlags, OffByDefaultAndTakenOutBeforeCli11) {
  EXPECT_FALSE(parse({}).gbench.on);
  const Options o = parse({"-n", "7", "--gbench", "--benchmark_repetitions=12", "--benchmark_format=json",
                           "--benchmark_out=x.json", "--benchmark_out_format=csv", "-b", "1K",
                           "--benchmark_filter=/8/", "--benchmark_time_unit=ns"});
  EXPECT_TRUE(o.gbench.on);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.gbench.repetitions, 12);
  EXPECT_EQ(o.gbench.format, "json");
  EXPECT_EQ(o.gbench.out, "x.json");
  EXPECT_EQ(o.gbench.out_format, "csv");
  EXPECT_EQ(o.gbench.filter, "/8/");
  EXPECT_EQ(o.gbench.time_unit, "ns");
  EXPECT_EQ(parse({"--gbench"}).gbench.repetitions, 9);  // compare.py's comfortable count
}

TEST(GbenchFlags, BadValuesAreOneLineUsageErrors) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"--gbench", "--benchmark_repetitions=0"}, "--benchmark_repetitions must be a whole number of at least 1, got '0'"},
      {{"--gbench", "--benchmark_repetitions=nine"}, "got 'nine'"},
      {{"--gbench", "--benchmark_repetitions=-3"}, "got '-3'"},
      {{"--gbench", "--benchmark_repetitions=3x"}, "got '3x'"},
      {{"--gbench", "--benchmark_repetitions"}, "--benchmark_repetitions must be a whole number"},
      {{"--gbench", "--benchmark_format=xml"}, "--benchmark_format must be one of console, json, csv, got 'xml'"},
      {{"--gbench", "--benchmark_out_format=yaml"}, "--benchmark_out_format must be one of console, json, csv"},
      {{"--gbench", "--benchmark_out"}, "--benchmark_out needs a value"},
      {{"--gbench", "--benchmark_out="}, "--benchmark_out needs a value"},
      {{"--gbench", "--benchmark_time_unit=h"}, "--benchmark_time_unit must be one of ns, us, ms, s"},
      {{"--gbench", "--benchmark_bogus=1"}, "unknown Google Benchmark flag '--benchmark_bogus'"},
      {{"--gbench", "--benchmark_filter=("}, "--benchmark_filter is not a regular expression"},
      {{"--gbench", "--benchmark_context=novalue"}, "--benchmark_context takes key=value pairs"},
      {{"--gbench", "--benchmark_context=a=1,b"}, "--benchmark_context takes key=value pairs"},
      {{"--benchmark_format=json"}, "--benchmark_format applies to --gbench only"},
      {{"--gbench", "--format", "jsonl"}, "drop --format"},
  };
  for (const auto& [args, want] : cases) {
    const std::string got = refusal(args);
    EXPECT_NE(got.find(want), std::string::npos) << args.back() << ": " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

// Each would let the ranks run different iteration counts or orders.
TEST(GbenchFlags, RefusesWhatWouldSplitTheRanks) {
  EXPECT_NE(refusal({"--gbench", "--benchmark_min_time=0.5"}).find("does not apply"), std::string::npos);
  EXPECT_NE(refusal({"--gbench", "--benchmark_min_warmup_time=1"}).find("does not apply"), std::string::npos);
  for (const char* on : {"--benchmark_enable_random_interleaving", "--benchmark_enable_random_interleaving=true",
                         "--benchmark_enable_random_interleaving=1", "--benchmark_enable_random_interleaving=yes"})
    EXPECT_NE(refusal({"--gbench", on}).find("cannot be used"), std::string::npos) << on;
  for (const char* off : {"--benchmark_enable_random_interleaving=false", "--benchmark_enable_random_interleaving=0",
                          "--benchmark_enable_random_interleaving=no", "--benchmark_enable_random_interleaving=OFF"})
    EXPECT_EQ(refusal({"--gbench", off}), "") << off;
}

// The library gets every flag it reads stated, so its BENCHMARK_* variables change nothing;
// the report-only flags come last, as given.
TEST(GbenchFlags, TheLibrarysCommandLineStatesEveryFlag) {
  const Options o = parse({"--gbench", "--benchmark_repetitions=4", "--benchmark_format=json",
                           "--benchmark_counters_tabular", "--benchmark_color=true",
                           "--benchmark_context=run=a,host=b", "--benchmark_list_tests=1"});
  const std::vector<std::string> args = gbench_command_line(o.gbench, "bin/x", "x.json.tmp");
  auto has = [&](const std::string& a) { return std::find(args.begin(), args.end(), a) != args.end(); };
  EXPECT_EQ(args.front(), "bin/x");
  for (const char* want : {"--benchmark_repetitions=4", "--benchmark_format=json", "--benchmark_out=x.json.tmp",
                           "--benchmark_out_format=json", "--benchmark_enable_random_interleaving=false",
                           "--benchmark_min_warmup_time=0", "--benchmark_filter=", "--benchmark_list_tests=true",
                           "--benchmark_time_unit=us", "--benchmark_color=true",
                           "--benchmark_counters_tabular=true"})
    EXPECT_TRUE(has(want)) << want;
  EXPECT_EQ(args.back(), "--benchmark_context=run=a,host=b");
  EXPECT_TRUE(o.gbench.color && o.gbench.counters_tabular);
  EXPECT_FALSE(parse({"--gbench"}).gbench.color);  // off unless asked for
  EXPECT_FALSE(parse({"--gbench", "--benchmark_color=no"}).gbench.color);
  EXPECT_FALSE(has("--benchmark_out="));
  // The other ranks: no file, whatever BENCHMARK_OUT says.
  const std::vector<std::string> other = gbench_command_line(o.gbench, "bin/x", "");
  EXPECT_NE(std::find(other.begin(), other.end(), "--benchmark_out="), other.end());
}

TEST(GbenchFlags, FilterSelectsAsTheLibraryDoes) {
  const std::string name = "allreduce_ring/mpi/host/float/sum/1024/iterations:20/repeats:9/manual_time";
  EXPECT_TRUE(gbench_filter_selects("", name));
  EXPECT_TRUE(gbench_filter_selects("all", name));
  EXPECT_TRUE(gbench_filter_selects("/1024/", name));
  EXPECT_TRUE(gbench_filter_selects("sum/(8|1024)/", name));
  EXPECT_FALSE(gbench_filter_selects("/8/", name));
  EXPECT_FALSE(gbench_filter_selects("-/1024/", name));  // a leading '-': not
  EXPECT_TRUE(gbench_filter_selects("-/8/", name));
}

}  // namespace
}  // namespace collscope::bench
