// pingpong's command line without MPI: its pairs and patterns, and the steps a run
// measures. (The patterns' schedules and theory are the catalogue's, checked in
// collectives/tests/p2p_schedule_test.cpp.)
#include <gtest/gtest.h>

#include <vector>

#include "../pingpong/options.hpp"
#include "collscope/errors.hpp"

namespace collscope::bench::pingpong {
namespace {

PingpongOptions parse(std::vector<const char*> args) {
  args.insert(args.begin(), "pingpong");
  return parse_pingpong_options(static_cast<int>(args.size()), args.data());
}

TEST(PingpongOptions, PairsAndPatterns) {
  const PingpongOptions defaults = parse({});
  EXPECT_FALSE(defaults.all_pairs);
  EXPECT_EQ(defaults.pair.a, 0);
  EXPECT_EQ(defaults.pair.b, 1);
  EXPECT_EQ(defaults.pattern, Pattern::pairs);
  const PingpongOptions two_five = parse({"--pairs", "2,5"});
  EXPECT_EQ(two_five.pair.a, 2);
  EXPECT_EQ(two_five.pair.b, 5);
  EXPECT_TRUE(parse({"--pairs", "all"}).all_pairs);
  const PingpongOptions rounds = parse({"--pattern", "rounds"});
  EXPECT_EQ(rounds.pattern, Pattern::rounds);
  EXPECT_TRUE(rounds.all_pairs);  // rounds measure every pair
  EXPECT_EQ(pattern_name(parse({"--pattern", "ring"}).pattern), "ring");
}

TEST(PingpongOptions, RefusesBadPairsAndPatterns) {
  for (const char* bad : {"0", "0,", ",1", "a,b", "-1,2", "1,2,3"})
    EXPECT_THROW(parse({"--pairs", bad}), UsageError) << bad;
  EXPECT_THROW(parse({"--pattern", "star"}), UsageError);
  EXPECT_THROW(parse({"--pattern", "ring", "--pairs", "0,1"}), UsageError);
  EXPECT_NO_THROW(parse({"--pattern", "ring", "--pairs", "all"}));
}

TEST(PingpongOptions, ChecksPairsAgainstTheRanks) {
  EXPECT_THROW(check_pairs(parse({}), 1), UsageError);
  EXPECT_NO_THROW(check_pairs(parse({}), 2));
  EXPECT_THROW(check_pairs(parse({"--pairs", "1,1"}), 4), UsageError);
  EXPECT_THROW(check_pairs(parse({"--pairs", "1,4"}), 4), UsageError);
  EXPECT_NO_THROW(check_pairs(parse({"--pairs", "3,1"}), 4));
  EXPECT_EQ(steps_to_measure(parse({"--pairs", "all"}), 5).size(), 10u);
  const std::vector<P2pStep> one = steps_to_measure(parse({"--pairs", "3,2"}), 5);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].pairs, (std::vector<Pair>{{3, 2}}));  // as given: 3 starts
  EXPECT_EQ(steps_to_measure(parse({"--pattern", "rounds"}), 5).size(), 5u);
  EXPECT_EQ(steps_to_measure(parse({"--pattern", "ring"}), 5).size(), 4u);
}

}  // namespace
}  // namespace collscope::bench::pingpong
