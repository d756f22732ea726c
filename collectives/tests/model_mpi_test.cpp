// The time model on schedules recorded from the real algorithms (ctest runs it under
// mpiexec): the ring allreduce's recorded trace must give the textbook figure exactly,
// and every hand-written algorithm's trace must replay to the end and carry exactly the
// bytes and messages its theory gives.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "collscope/algorithm.hpp"
#include "collscope/collective.hpp"
#include "collscope/errors.hpp"
#include "collscope/model.hpp"
#include "collscope/mpi_transport.hpp"
#include "collscope/recording_transport.hpp"
#include "collscope/verify/collective_data.hpp"
#include "collscope/verify/splits.hpp"

namespace collscope {
namespace {

// The same model as model_test.cpp: alpha 2 us, achieved bandwidth 1e9 B/s, reduce
// 4e9 B/s, start_lat 5 us, sync_lat 3 us.
Model test_model() {
  Model m;
  m.intra_node = {2e9, 0.5, 2e-6, 5e-6, 3e-6};
  m.inter_node = m.intra_node;
  m.reduce_rate = 4e9;
  return m;
}

class ModelMpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctrl_);
  }
  void TearDown() override { MPI_Comm_free(&ctrl_); }

  // One recorded call of `algo`; the traces of all ranks on rank 0.
  std::vector<RankTrace> record(const Algorithm& algo, CollArgs& a) {
    const CollectiveInfo& info = *find_collective(algo.collective);
    verify::CallBuffers buffers(info, a, false, rank_, n_);
    MpiTransport mpi(MPI_COMM_WORLD);
    RecordingTransport recording(mpi);
    Comm comm(recording, ctrl_);
    recording.attach_reducer(comm);
    recording.start();
    run_collective(comm, algo, a);
    recording.stop();
    return gather_traces(recording, ctrl_, 0);
  }

  int rank_ = 0, n_ = 1;
  MPI_Comm ctrl_ = MPI_COMM_NULL;
};

// Blocks of B = 1,000,000 B (250,000 floats): per rank and step alpha + B / bw =
// 2 + 1000 us, per reduce-scatter step B / reduce_rate = 250 us. At N = 4:
// 5 + 6 x 1002 + 3 x 250 + 3 = 6770 us.
TEST_F(ModelMpiTest, RecordedRingAllreduceGivesTheTextbookFigure) {
  CollArgs a;
  a.count = static_cast<std::size_t>(n_) * 250'000;
  const std::vector<RankTrace> traces = record(*find_algorithm("allreduce", "ring"), a);
  if (rank_ != 0) return;
  const double steps = n_ - 1;
  const double want = n_ == 4 ? 6770.0 : 5 + 2 * steps * 1002 + steps * 250 + 3;
  EXPECT_NEAR(predict_us(traces, std::vector<int>(traces.size(), 0), test_model()), want, 1e-6);
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

TEST_F(ModelMpiTest, EveryAlgorithmsTraceReplaysAndCarriesItsTheory) {
  const std::vector<std::uint64_t> splits =
      verify::make_splits(verify::SplitPattern::random, 1001, n_, 5);
  for (const Algorithm& algo : all_algorithms()) {
    if (algo.vendor) continue;
    CollArgs a;
    a.count = 1001;
    a.root = n_ - 1;
    a.segment_bytes = 1024;  // several segments in the pipelined trees
    a.splits = splits;
    if (algo.constraint && algo.constraint(n_, a)) continue;
    const std::vector<RankTrace> traces = record(algo, a);
    if (rank_ != 0) continue;
    const std::string what = std::string(algo.collective) + "/" + std::string(algo.name);
    double us = 0;
    EXPECT_NO_THROW(us = predict_us(traces, std::vector<int>(traces.size(), 0), test_model()))
        << what;
    EXPECT_GE(us, 8.0) << what;  // start_lat + sync_lat at least
    for (int r = 0; r < n_; ++r) {
      const TraceVolume v = volume_of(traces[static_cast<std::size_t>(r)]);
      EXPECT_EQ(v.volume, algo.theory(r, n_, a)) << what << " rank " << r;
      EXPECT_EQ(v.waits, v.posts) << what << " rank " << r << ": every request waited for";
    }
  }
}

}  // namespace
}  // namespace collscope
