#include <gtest/gtest.h>

#include "collscope/bench/options.hpp"
#include "collscope/errors.hpp"

namespace collscope::bench {
namespace {

Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  return parse_options(static_cast<int>(args.size()), args.data(), "prog");
}

TEST(Options, SizesWithSuffixes) {
  EXPECT_EQ(parse_size("64", "-b"), 64u);
  EXPECT_EQ(parse_size("1K", "-b"), 1024u);
  EXPECT_EQ(parse_size("16M", "-b"), 16u << 20);
  EXPECT_EQ(parse_size("1G", "-b"), 1u << 30);
  EXPECT_EQ(parse_size("2kib", "-b"), 2048u);
  EXPECT_EQ(parse_size("0", "-b"), 0u);
  for (const char* bad : {"", "-1", "1.5M", "K", "12Q", "1MM", "99999999999999999999", "17179869184T"})
    EXPECT_THROW(parse_size(bad, "-b"), UsageError) << bad;
}

TEST(Options, TimingAndRanksParseIntoEnums) {
  const Options defaults = parse({});
  EXPECT_EQ(defaults.timing, Timing::call);
  EXPECT_EQ(defaults.ranks, RankCombine::max);
  EXPECT_EQ(parse({"--timing", "loop"}).timing, Timing::loop);
  EXPECT_EQ(parse({"--ranks", "avg"}).ranks, RankCombine::avg);
  EXPECT_EQ(parse({"--ranks", "min"}).ranks, RankCombine::min);
  EXPECT_EQ(parse({"--ranks", "max"}).ranks, RankCombine::max);
  for (const char* bad : {"mean", "MAX", ""}) EXPECT_THROW(parse({"--ranks", bad}), UsageError) << bad;
  EXPECT_THROW(parse({"--timing", "graph"}), UsageError);
  EXPECT_EQ(rank_combine_name(RankCombine::avg), "avg");
  EXPECT_EQ(timing_name(Timing::loop), "loop");
}

TEST(Options, RanksCombineAsNcclTestsDo) {
  const std::vector<double> times{3.0, 1.0, 2.0, 6.0};
  EXPECT_DOUBLE_EQ(combine_ranks(times, RankCombine::max), 6.0);
  EXPECT_DOUBLE_EQ(combine_ranks(times, RankCombine::min), 1.0);
  EXPECT_DOUBLE_EQ(combine_ranks(times, RankCombine::avg), 3.0);
  const std::vector<double> one{2.5};
  for (RankCombine how : {RankCombine::max, RankCombine::avg, RankCombine::min})
    EXPECT_DOUBLE_EQ(combine_ranks(one, how), 2.5);
}

TEST(Options, OtherThreadsOnlyWithAWatchdogAGpuOrUcx) {
  EXPECT_FALSE(runs_other_threads(parse({})));
  EXPECT_FALSE(runs_other_threads(parse({"--timing", "loop", "--ranks", "avg"})));
  EXPECT_TRUE(runs_other_threads(parse({"--timeout", "5"})));
  EXPECT_TRUE(runs_other_threads(parse({"-m", "device"})));
  EXPECT_TRUE(runs_other_threads(parse({"-t", "ucx"})));
}

TEST(Options, SweepIncludesBothEnds) {
  Options o;
  o.min_bytes = 1000;
  o.max_bytes = 5000;
  o.step_factor = 2;
  EXPECT_EQ(sweep_sizes(o), (std::vector<std::size_t>{1000, 2000, 4000, 5000}));
  o.min_bytes = o.max_bytes = 64;
  EXPECT_EQ(sweep_sizes(o), (std::vector<std::size_t>{64}));
  o.min_bytes = 0;
  o.max_bytes = 4;
  EXPECT_EQ(sweep_sizes(o), (std::vector<std::size_t>{0, 1, 2, 4}));
}

TEST(Options, ParsesTheNcclTestsFlags) {
  const Options o = parse({"-b", "8", "-e", "1M", "-f", "2", "-n", "7", "-w", "0", "-c", "0", "-d",
                           "float16", "-o", "max", "--format", "jsonl", "--timeout", "5"});
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, 1u << 20);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::float16});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::max});
  EXPECT_EQ(o.format, OutputFormat::jsonl);
  EXPECT_DOUBLE_EQ(o.timeout_s, 5.0);
}

TEST(Options, AllDtypesAndOpsSkipInvalidPairsInsteadOfFailing) {
  const Options o = parse({"-d", "all", "-o", "all"});
  EXPECT_EQ(o.dtypes.size(), 8u);
  EXPECT_EQ(o.ops.size(), 5u);
  EXPECT_THROW(parse({"-d", "int8", "-o", "avg"}), UsageError);
}

TEST(Options, RejectsBadInput) {
  for (auto args : std::vector<std::vector<const char*>>{
           {"--nope"}, {"-n", "0"}, {"-n", "x"}, {"-b", "2M", "-e", "1M"}, {"-d", "fp8"},
           {"-o", "band"}, {"-c", "3"}, {"-m", "gpu"}, {"--timeout", "-1"}, {"-r", "-1"}})
    EXPECT_THROW(parse(args), UsageError) << args[0];
}

}  // namespace
}  // namespace collscope::bench
