// The catalogue's point-to-point patterns (runtime/p2p.hpp): their names and steps, and
// every step's schedules at N = 2..9 through the schedule checker (matching, bounds,
// hazards, the planned volume against the step's theory, cell by cell), which must also
// catch a pattern whose theory or schedule is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <utility>
#include <vector>

#include "collscope/patterns/tournament.hpp"
#include "collscope/runtime/p2p.hpp"
#include "collscope/schedule_check.hpp"

namespace collscope {
namespace {

using patterns::RankPair;

constexpr std::size_t kSizes[] = {0, 1, 8, 4096};

TEST(P2pCatalogue, NamesInTheEnumsOrder) {
  const auto all = all_p2p_patterns();
  ASSERT_EQ(all.size(), 3u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(all[i].pattern), i);
    EXPECT_EQ(p2p_by_name(all[i].name), all[i].pattern);
    EXPECT_EQ(&p2p_entry(all[i].pattern), &all[i]);
    EXPECT_FALSE(all[i].summary.empty());
  }
  EXPECT_EQ(p2p_entry(P2pPattern::rounds).name, "rounds");
  EXPECT_FALSE(p2p_by_name("star").has_value());
  EXPECT_FALSE(p2p_by_name("").has_value());
}

TEST(P2pCatalogue, PairsStepThroughEveryPairOnce) {
  for (int n = 2; n <= 9; ++n) {
    std::set<std::pair<int, int>> seen;
    for (const P2pStep& s : p2p_entry(P2pPattern::pairs).steps(n)) {
      ASSERT_EQ(s.pairs.size(), 1u);
      EXPECT_LT(s.pairs[0].a, s.pairs[0].b);
      EXPECT_TRUE(seen.insert({s.pairs[0].a, s.pairs[0].b}).second);
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(n * (n - 1) / 2)) << n;
  }
}

TEST(P2pCatalogue, RoundsAreTheTournamentAndRingTheShifts) {
  for (int n = 2; n <= 9; ++n) {
    const std::vector<std::vector<RankPair>> rounds = patterns::tournament_rounds(n);
    const std::vector<P2pStep> steps = p2p_entry(P2pPattern::rounds).steps(n);
    ASSERT_EQ(steps.size(), rounds.size());
    for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].pairs, rounds[i]);
    const std::vector<P2pStep> shifts = p2p_entry(P2pPattern::ring).steps(n);
    ASSERT_EQ(shifts.size(), static_cast<std::size_t>(n - 1));
    for (int k = 1; k < n; ++k) {
      EXPECT_EQ(shifts[static_cast<std::size_t>(k - 1)].shift, k);
      EXPECT_TRUE(shifts[static_cast<std::size_t>(k - 1)].pairs.empty());
    }
  }
}

TEST(P2pSchedules, EveryStepOfEveryPatternPassesTheChecker) {
  for (const P2pEntry& e : all_p2p_patterns())
    for (int n = 2; n <= 9; ++n)
      for (const P2pStep& step : e.steps(n))
        for (std::size_t bytes : kSizes)
          EXPECT_EQ(check_p2p_step(e, step, n, bytes), std::nullopt)
              << e.name << " N " << n << " bytes " << bytes << " shift " << step.shift;
}

// pingpong --pairs 3,1: the named pair as it was given, rank 3 starting the round trip.
TEST(P2pSchedules, APairGivenHighRankFirstPassesTheChecker) {
  const P2pStep step{{RankPair{3, 1}}};
  for (std::size_t bytes : kSizes)
    EXPECT_EQ(check_p2p_step(p2p_entry(P2pPattern::pairs), step, 4, bytes), std::nullopt) << bytes;
  // Rank 3 sends first: its first step holds the ping.
  Plan plan = p2p_plan(3, 4, 8);
  Steps steps = p2p_entry(P2pPattern::pairs).schedule(plan, step, "probe");
  ASSERT_TRUE(steps.next());
  ASSERT_EQ(steps.value().comm.size(), 1u);
  EXPECT_FALSE(steps.value().comm[0].receives());
  EXPECT_EQ(steps.value().comm[0].peer, 1);
}

TEST(P2pSchedules, ARestingRankPlansNothing) {
  const P2pStep round{{RankPair{0, 1}}};
  EXPECT_EQ(planned_volume(p2p_entry(P2pPattern::rounds), round, 2, 3, 64),
            std::vector<RankVolume>(3));
}

// The checker fails a pattern whose theory is another step's, or whose schedule is
// another pattern's.
TEST(P2pSchedules, TheCheckerCatchesAWrongTheoryOrSchedule) {
  P2pEntry wrong_theory = p2p_entry(P2pPattern::ring);
  wrong_theory.theory = [](const P2pStep& s, std::uint64_t bytes, int n) {
    return p2p_entry(P2pPattern::ring).theory(P2pStep{{}, s.shift + 1}, bytes, n);
  };
  const auto theory_problem = check_p2p_step(wrong_theory, P2pStep{{}, 1}, 4, 8);
  ASSERT_TRUE(theory_problem.has_value());
  EXPECT_NE(theory_problem->find("theory"), std::string::npos) << *theory_problem;

  P2pEntry wrong_schedule = p2p_entry(P2pPattern::pairs);
  wrong_schedule.schedule = [](Plan& p, const P2pStep&, const char* phase) {
    return p2p_entry(P2pPattern::ring).schedule(p, P2pStep{{}, 1}, phase);
  };
  EXPECT_TRUE(check_p2p_step(wrong_schedule, P2pStep{{RankPair{0, 1}}}, 4, 8).has_value());
}

}  // namespace
}  // namespace collscope
