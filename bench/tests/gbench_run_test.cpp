// run_gbench (bench/include/collscope/bench/gbench.hpp) at 2 ranks over made-up cases
// whose times are known: each case opened once before its first timed iteration and
// closed once after its last, on every rank; the report's repetitions, counters and
// aggregates made of exactly those times; a wrong case reported as errors; the filter.
#include <gtest/gtest.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collscope/bench/gbench.hpp"
#include "collscope/errors.hpp"

namespace collscope::bench {
namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// A case whose k-th timed iteration takes k us, with a log of what was called.
struct FakeCase {
  std::string wrong;  // what open() says on rank 0
  int opened = 0, closed = 0, timed = 0;
  bool timed_before_open = false, timed_after_close = false;
  GbenchCase make(const std::string& name) {
    GbenchCase g;
    g.name = name;
    g.bytes = 1000;
    g.busbw_factor = 0.5;
    g.open = [this] {
      ++opened;
      return rank() == 0 ? wrong : std::string();
    };
    g.timed_us = [this] {
      timed_before_open |= opened == 0;
      timed_after_close |= closed > 0;
      return static_cast<double>(++timed);
    };
    g.close = [this] { ++closed; };
    return g;
  }
};

GbenchOptions options(const std::string& out, const std::string& filter = "") {
  GbenchOptions o;
  o.on = true;
  o.repetitions = 4;
  o.out = out;
  o.filter = filter;
  o.format = "json";
  return o;
}

GbenchRun run_of() { return {3, "gbench_run_test", "gbench_run_test", {{"collscope_nranks", "2"}}}; }

std::vector<nlohmann::json> entries(const nlohmann::json& report, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& b : report["benchmarks"])
    if (b["run_name"] == name) out.push_back(b);
  return out;
}

TEST(GbenchRun, EveryRankRunsTheSameIterationsBetweenOpenAndClose) {
  const std::string path = "gbench_run_test.json";
  FakeCase ok, wrong;
  wrong.wrong = "3 wrong elements";
  std::vector<GbenchCase> cases{ok.make("t/ok"), wrong.make("t/wrong")};
  testing::internal::CaptureStdout();  // rank 0's report on stdout: not the test's
  EXPECT_TRUE(run_gbench(cases, options(path), run_of(), MPI_COMM_WORLD));
  testing::internal::GetCapturedStdout();
  for (const FakeCase* c : {&ok, &wrong}) {
    EXPECT_EQ(c->opened, 1);
    EXPECT_EQ(c->closed, 1);
    EXPECT_EQ(c->timed, 4 * 3);  // repetitions x iterations, on every rank
    EXPECT_FALSE(c->timed_before_open);
    EXPECT_FALSE(c->timed_after_close);
  }
  if (rank() != 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "rank 0 wrote " << path;
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["context"]["collscope_nranks"], "2");
  const std::string name = "t/ok/iterations:3/repeats:4/manual_time";
  std::vector<double> means;
  for (const auto& b : entries(report, name)) {
    if (b["run_type"] != "iteration") continue;
    const double k = b["repetition_index"];  // its iterations took 3k+1, 3k+2, 3k+3 us
    EXPECT_DOUBLE_EQ(b["real_time"].get<double>(), 3 * k + 2);
    EXPECT_EQ(b["time_unit"], "us");
    EXPECT_DOUBLE_EQ(b["bytes"].get<double>(), 1000);
    EXPECT_NEAR(b["algbw"].get<double>(), 1000 / ((3 * k + 2) * 1e-6), 1e-3);
    EXPECT_NEAR(b["busbw"].get<double>(), 0.5 * b["algbw"].get<double>(), 1e-3);
    means.push_back(3 * k + 2);
  }
  ASSERT_EQ(means.size(), 4u);  // 2, 5, 8, 11
  std::map<std::string, double> agg;
  for (const auto& b : entries(report, name))
    if (b["run_type"] == "aggregate") agg[b["aggregate_name"]] = b["real_time"];
  EXPECT_DOUBLE_EQ(agg["mean"], 6.5);
  EXPECT_DOUBLE_EQ(agg["median"], 6.5);
  EXPECT_DOUBLE_EQ(agg["p25"], 4.25);  // linear between order statistics
  EXPECT_DOUBLE_EQ(agg["p75"], 8.75);
  EXPECT_DOUBLE_EQ(agg["min"], 2);
  EXPECT_DOUBLE_EQ(agg["max"], 11);
  const auto bad = entries(report, "t/wrong/iterations:3/repeats:4/manual_time");
  ASSERT_EQ(bad.size(), 4u);  // no aggregates over errors
  for (const auto& b : bad) {
    EXPECT_EQ(b["error_occurred"], true);
    EXPECT_EQ(b["error_message"], "3 wrong elements");
  }
  std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(GbenchRun, TheFilterSelectsBeforeAnythingRuns) {
  FakeCase a, b;
  std::vector<GbenchCase> cases{a.make("t/a"), b.make("t/b")};
  testing::internal::CaptureStdout();
  EXPECT_TRUE(run_gbench(cases, options("", "-/b/"), run_of(), MPI_COMM_WORLD));
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(a.opened, 1);
  EXPECT_EQ(b.opened, 0);
  EXPECT_EQ(b.timed, 0);
  if (rank() == 0) EXPECT_NE(out.find("t/a/iterations:3"), std::string::npos);
  else EXPECT_EQ(out, "");  // the other ranks print nothing
  EXPECT_THROW(run_gbench(cases, options("", "nothing"), run_of(), MPI_COMM_WORLD), UsageError);
  EXPECT_THROW(run_gbench(cases, options("/nonexistent/dir/x.json"), run_of(), MPI_COMM_WORLD),
               RuntimeErrorOnAllRanks);
}

}  // namespace
}  // namespace collscope::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  if (collscope::bench::rank() != 0) {  // one report of the test's own
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
