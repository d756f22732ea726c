// pingpong's parts without MPI: its command line, and the volume its schedules plan
// (every rank's messages per peer) against the theory the runs check them by, cell by
// cell, for every pattern at N = 2..9.
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "../pingpong/options.hpp"
#include "../pingpong/schedules.hpp"
#include "collscope/errors.hpp"
#include "collscope/executor.hpp"
#include "collscope/theory.hpp"
#include "collscope/volume.hpp"

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
  EXPECT_EQ(pairs_to_measure(parse({"--pairs", "all"}), 5).size(), 10u);
  EXPECT_EQ(pairs_to_measure(parse({"--pairs", "2,3"}), 5).size(), 1u);
}

// A rank's schedule of one call, or none (a rank that rests).
using ScheduleOf = std::function<std::optional<Steps>(Plan&, int rank)>;

// The N x N volume the ranks' schedules plan: row r, column p is r's counts with p, by
// the executors' own counting rule (Traffic::count).
std::vector<RankVolume> planned(int nranks, std::size_t bytes, const ScheduleOf& schedule_of) {
  std::vector<RankVolume> m;
  for (int r = 0; r < nranks; ++r) {
    Traffic traffic(nranks);
    Plan plan = payload_plan(r, nranks, bytes);
    std::optional<Steps> steps = schedule_of(plan, r);
    while (steps && steps->next())
      for (const CommOp& op : steps->value().comm) traffic.count(op);
    m.insert(m.end(), traffic.per_peer().begin(), traffic.per_peer().end());
  }
  return m;
}

constexpr std::size_t kSizes[] = {0, 1, 8, 4096};

TEST(PingpongSchedules, OnePairPlansItsTheory) {
  for (int n = 2; n <= 9; ++n)
    for (std::size_t bytes : kSizes)
      for (const Pair pair : {Pair{0, 1}, Pair{0, n - 1}, Pair{n / 2, n - 1}}) {
        if (pair.a == pair.b) continue;
        const ScheduleOf one_pair = [&](Plan& p, int r) -> std::optional<Steps> {
          if (r != pair.a && r != pair.b) return std::nullopt;
          return round_trip_steps(p, r == pair.a, r == pair.a ? pair.b : pair.a, "probe");
        };
        EXPECT_EQ(planned(n, bytes, one_pair), theory::pingpong_pair(pair, bytes, n))
            << "N " << n << " bytes " << bytes << " pair " << pair.a << "," << pair.b;
      }
}

TEST(PingpongSchedules, EveryTournamentRoundPlansItsTheory) {
  for (int n = 2; n <= 9; ++n)
    for (std::size_t bytes : kSizes)
      for (const std::vector<Pair>& round : patterns::tournament_rounds(n)) {
        const ScheduleOf in_round = [&](Plan& p, int r) -> std::optional<Steps> {
          for (const Pair& pair : round)
            if (r == pair.a || r == pair.b)
              return round_trip_steps(p, r == pair.a, r == pair.a ? pair.b : pair.a, "probe");
          return std::nullopt;
        };
        EXPECT_EQ(planned(n, bytes, in_round), theory::pingpong_round(round, bytes, n))
            << "N " << n << " bytes " << bytes;
      }
}

TEST(PingpongSchedules, EveryRingShiftPlansItsTheory) {
  for (int n = 2; n <= 9; ++n)
    for (std::size_t bytes : kSizes)
      for (int k = 1; k < n; ++k) {
        const ScheduleOf shift = [&](Plan& p, int r) -> std::optional<Steps> {
          return ring_step_steps(p, (r + k) % n, (r - k + n) % n, "probe");
        };
        EXPECT_EQ(planned(n, bytes, shift), theory::pingpong_shift(k, bytes, n))
            << "N " << n << " bytes " << bytes << " k " << k;
      }
}

}  // namespace
}  // namespace collscope::bench::pingpong
