// The time model on the real algorithms' schedules (computed, not recorded): the ring
// allreduce's trace must give the textbook figure exactly, and every hand-written
// algorithm's traces, at N = 1..8 and the ranks it runs at, must replay to the end and
// carry exactly the bytes and messages its theory gives.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collscope/schedule_trace.hpp"
#include "collscope/verify/splits.hpp"
#include "test_model.hpp"

namespace collscope {
namespace {

using test::flat_model;

// Blocks of B = 1,000,000 B (250,000 floats): per rank and step alpha + B / bw =
// 2 + 1000 us, per reduce-scatter step B / reduce_rate = 250 us. At N = 4:
// 5 + 6 x 1002 + 3 x 250 + 3 = 6770 us.
TEST(ModelOnSchedules, RingAllreduceGivesTheTextbookFigure) {
  for (int n : {2, 3, 4, 8}) {
    CollArgs a;
    a.count = static_cast<std::size_t>(n) * 250'000;
    const auto traces = traces_of(*find_algorithm(Collective::allreduce, "ring"), n, a, false);
    const double steps = n - 1;
    const double want = n == 4 ? 6770.0 : 5 + 2 * steps * 1002 + steps * 250 + 3;
    EXPECT_NEAR(predict_us(traces, std::vector<int>(traces.size(), 0), flat_model()), want, 1e-6)
        << "N = " << n;
  }
}

struct TraceVolume {
  RankVolume volume;
  std::uint64_t waits = 0, posts = 0;
};

TraceVolume volume_of(const RankTrace& t) {
  TraceVolume v;
  for (const TraceEvent& e : t.events) {
    if (e.op == TraceOp::send) v.volume += RankVolume{e.bytes, 1, 0, 0};
    if (e.op == TraceOp::recv) v.volume += RankVolume{0, 0, e.bytes, 1};
    v.posts += e.op == TraceOp::send || e.op == TraceOp::recv;
    v.waits += e.op == TraceOp::wait;
  }
  return v;
}

TEST(ModelOnSchedules, EveryAlgorithmsTraceReplaysAndCarriesItsTheory) {
  for (int n = 1; n <= 8; ++n) {
    const std::vector<std::uint64_t> splits =
        verify::make_splits(verify::SplitPattern::random, 1001, n, 5);
    for (const Algorithm& algo : all_algorithms()) {
      if (!algo.schedule) continue;
      CollArgs a;
      a.count = 1001;
      a.root = n - 1;
      a.segment_bytes = 1024;  // several segments in the pipelined algorithms
      a.splits = splits;
      const auto traces = traces_of(algo, n, a, false);
      const std::string what = algo.full_name() + " N=" + std::to_string(n);
      double us = 0;
      EXPECT_NO_THROW(us = predict_us(traces, std::vector<int>(traces.size(), 0), flat_model()))
          << what;
      EXPECT_GE(us, 8.0) << what;  // start_lat + sync_lat at least
      for (int r = 0; r < n; ++r) {
        const TraceVolume v = volume_of(traces[static_cast<std::size_t>(r)]);
        EXPECT_EQ(v.volume, theory_total(algo.theory, r, n, a)) << what << " rank " << r;
        EXPECT_EQ(v.waits, v.posts) << what << " rank " << r << ": every request waited for";
      }
      // The first pass of collscope_predict counts from the steps what the trace moves.
      for (const bool in_place : {false, true}) {
        if (call_problem(algo, n, a, in_place)) continue;
        const auto placed = traces_of(algo, n, a, in_place);
        for (int r = 0; r < n; ++r)
          EXPECT_EQ(schedule_totals(algo, r, n, a, in_place),
                    totals_of(placed[static_cast<std::size_t>(r)]))
              << what << (in_place ? " in place" : "") << " rank " << r;
      }
    }
  }
}

// Rank 0's sends, in order: whether each is from the caller's input.
std::vector<bool> input_flags(Collective c, const char* name, int n, bool in_place) {
  CollArgs a;
  a.count = 64 * static_cast<std::size_t>(n);
  const auto traces = traces_of(*find_algorithm(c, name), n, a, in_place);
  std::vector<bool> out;
  for (const TraceEvent& e : traces[0].events)
    if (e.op == TraceOp::send) out.push_back(e.from_input);
  return out;
}

// A send is from the input unless it reads bytes the rank received, reduced or copied
// earlier in the call (in place: or that the call writes at all).
TEST(ModelOnSchedules, SendsFromTheInputAreMarked) {
  using V = std::vector<bool>;
  // The ring sends its own block from the send buffer, then forwards what it received.
  EXPECT_EQ(input_flags(Collective::allgather, "ring", 2, false), V({true}));
  EXPECT_EQ(input_flags(Collective::allgather, "ring", 4, false), V({true, false, false}));
  // In place the own block already sits in the receive buffer, never written in the call.
  EXPECT_EQ(input_flags(Collective::allgather, "ring", 2, true), V({true}));
  // Recursive doubling copies its own block into place first and sends the copy.
  EXPECT_EQ(input_flags(Collective::allgather, "recursive_doubling", 2, false), V({false}));
  // The ring all-reduce: input in the reduce-scatter, reduced blocks in the all-gather.
  EXPECT_EQ(input_flags(Collective::allreduce, "ring", 2, false), V({true, false}));
  // In place its first send reads a block the all-gather overwrites later in the call:
  // in a loop of calls the previous call wrote it just before.
  EXPECT_EQ(input_flags(Collective::allreduce, "ring", 2, true), V({false, false}));
  // A broadcast's root sends its buffer, which the call never writes on the root.
  EXPECT_EQ(input_flags(Collective::broadcast, "binomial", 2, false), V({true}));
}

}  // namespace
}  // namespace collscope
