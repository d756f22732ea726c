// The dissemination barrier's schedule, checked without any communication: after the
// last round every rank has heard, through some chain of signals, from every rank, and
// not before (so no round is wasted); signal and wait agree; the theory counts one
// signal each way per round.
//
// Checking the barrier's semantics over MPI (for collective_mpi_test; note for the
// lead): a barrier is right when no rank leaves before every rank has entered. A check
// that does not depend on clocks:
//   1. MPI_Win_allocate one int64 counter on rank 0 (zeroed), MPI_Win_lock_all.
//   2. Each iteration i (1..iters): every rank MPI_Fetch_and_op(+1) on the counter and
//      MPI_Win_flush(0) (the increment is complete at rank 0), then runs the barrier
//      under test, then reads the counter (MPI_Fetch_and_op with MPI_NO_OP, flush).
//   3. After the barrier the value read must be >= N * i on every rank: every rank's
//      increment of this iteration happened before it entered. A second barrier under
//      test (or MPI_Barrier) before the next increment keeps iterations apart, and the
//      read must also be < N * (i + 1) + N (no rank was more than one barrier ahead).
//   A barrier that returns early (e.g. a rank that skips its wait) fails step 3 with
//   high probability when one rank, chosen per iteration, sleeps a few ms before
//   entering. Measured volume must equal barrier_dissemination_theory on every rank.
#include <gtest/gtest.h>

#include <vector>

#include "collscope/theory.hpp"
#include "collscope/patterns/dissemination.hpp"

namespace collscope::patterns {
namespace {

TEST(Dissemination, RoundsAreCeilLog2) {
  const int want[] = {0, 0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5};
  for (int n = 1; n <= 17; ++n) EXPECT_EQ(dissemination_rounds(n), want[n]) << n;
}

TEST(Dissemination, SignalAndWaitAgree) {
  for (int n = 1; n <= 33; ++n)
    for (int k = 0; k < dissemination_rounds(n); ++k)
      for (int r = 0; r < n; ++r) {
        const int to = dissemination_signal_peer(r, n, k);
        EXPECT_NE(to, r) << n << " " << k;
        EXPECT_EQ(dissemination_wait_peer(to, n, k), r) << n << " " << k << " " << r;
      }
}

// heard[r][s]: rank r's exit depends on rank s's arrival (transitively).
TEST(Dissemination, EveryRankHearsFromAllOnlyAfterTheLastRound) {
  for (int n = 1; n <= 33; ++n) {
    const auto un = static_cast<std::size_t>(n);
    std::vector<std::vector<bool>> heard(un, std::vector<bool>(un, false));
    for (std::size_t r = 0; r < un; ++r) heard[r][r] = true;
    const int rounds = dissemination_rounds(n);
    for (int k = 0; k < rounds; ++k) {
      auto next = heard;
      for (int r = 0; r < n; ++r) {
        const auto from = static_cast<std::size_t>(dissemination_wait_peer(r, n, k));
        for (std::size_t s = 0; s < un; ++s)
          if (heard[from][s]) next[static_cast<std::size_t>(r)][s] = true;
      }
      heard = std::move(next);
      bool all = true;
      for (const auto& row : heard)
        for (bool h : row) all = all && h;
      EXPECT_EQ(all, k == rounds - 1) << n << " round " << k;
    }
  }
}

TEST(Dissemination, TheoryIsOneSignalEachWayPerRound) {
  for (int n = 1; n <= 17; ++n) {
    const auto rounds = static_cast<std::uint64_t>(dissemination_rounds(n));
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(theory_total(theory::barrier_dissemination, r, n, CollArgs{}),
                (RankVolume{0, rounds, 0, rounds}));
  }
}

}  // namespace
}  // namespace collscope::patterns
