// Two independent counts of one call must agree, for every hand-written algorithm: the
// executor's counter (what it handed to the MPI transport, per peer) and the MPI
// library's own count (Open MPI's pml monitoring read through MPI_T, MpiMonitor). ctest
// runs this at N = 3 and 5 with pml_monitoring_enable=1, and at N = 3 with 2 (filtered):
// the MPI transport's messages are user point-to-point messages, counted in both modes;
// the library's own collectives send with internal tags, which filtered mode keeps out of
// the variables (a vendor call then reads as nothing at all).
#include <gtest/gtest.h>
#include <mpi.h>

#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/host_executor.hpp"
#include "collscope/mpi_monitoring.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/verify/collective_data.hpp"
#include "collscope/verify/splits.hpp"

namespace collscope {
namespace {

struct Case {
  std::size_t count;
  bool in_place;
};

long long sum_over_ranks(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

std::string first_difference(int rank, const std::vector<RankVolume>& counted, const SentCounts& seen) {
  for (std::size_t p = 0; p < counted.size(); ++p)
    if (counted[p].sent_bytes != seen.bytes[p] || counted[p].sent_msgs != seen.msgs[p]) {
      std::ostringstream s;
      s << "rank " << rank << " to rank " << p << ": counted " << counted[p].sent_bytes << " B/"
        << counted[p].sent_msgs << " msgs, the library saw " << seen.bytes[p] << " B/" << seen.msgs[p];
      return s.str();
    }
  return "";
}

class Witness : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    monitor_ = std::make_unique<MpiMonitor>();
    int here = monitor_->available() ? 1 : 0, everywhere = 0;
    MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) GTEST_SKIP() << "no library count here: " << monitor_->why_not();
  }
  void TearDown() override { monitor_.reset(); }  // MPI_T finalized before MPI_Finalize

  CollArgs args_of(const Algorithm& algo, const Case& k) const {
    CollArgs a;
    a.count = k.count;
    a.root = n_ > 1 ? 1 : 0;
    a.segment_bytes = 4096;  // several segments for the pipelined algorithms
    if (algo.collective == Collective::alltoallv)
      splits_ = verify::make_splits(verify::SplitPattern::random, k.count, n_, 11);
    a.splits = splits_;
    return a;
  }

  int rank_ = 0, n_ = 1;
  std::unique_ptr<MpiMonitor> monitor_;
  mutable std::vector<std::uint64_t> splits_;
};

TEST_F(Witness, TheLibrarySeesExactlyWhatTheCounterCountedForEveryHandWrittenAlgorithm) {
  const auto transport = make_transport(TransportKind::mpi, MPI_COMM_WORLD);
  HostExecutor executor(*transport);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  Comm comm(executor, dup);
  int checked = 0;
  for (const Algorithm& algo : all_algorithms()) {
    if (algo.is_vendor()) continue;
    const CollectiveInfo& info = algo.info();
    for (const Case& k : {Case{static_cast<std::size_t>(n_) + 1, false}, Case{10007, false},
                          Case{10007, true}}) {
      if (k.in_place && info.in_place == InPlace::none) continue;
      CollArgs a = args_of(algo, k);
      if (call_problem(algo, n_, a, k.in_place)) continue;
      verify::CallBuffers buffers(info, a, k.in_place, rank_, n_);
      verify::fill_collective_input(info, a, verify::data_spec_for(info, 3, a.dtype, a.op, n_), rank_);
      executor.traffic().reset();
      MPI_Barrier(MPI_COMM_WORLD);
      monitor_->start();
      run_collective(comm, algo, a);
      const SentCounts seen = monitor_->stop();
      const std::string diff = first_difference(rank_, executor.traffic().per_peer(), seen);
      if (!diff.empty()) std::cerr << algo.full_name() << ": " << diff << std::endl;  // any rank
      EXPECT_EQ(sum_over_ranks(diff.empty() ? 0 : 1), 0)
          << algo.full_name() << " N=" << n_ << " count=" << k.count
          << (k.in_place ? " in place" : "") << ": " << diff;
      ++checked;
    }
  }
  MPI_Comm_free(&dup);
  EXPECT_GT(checked, 40);
}

// Filtered or not, the library's MPI_Allreduce is seen whole or not at all.
TEST_F(Witness, TheLibrarysOwnCollectiveIsCountedOnlyWhenNotFiltered) {
  if (n_ < 2) GTEST_SKIP() << "one rank sends nothing";
  std::vector<float> in(1024, 1.0f), out(1024);
  MPI_Barrier(MPI_COMM_WORLD);
  monitor_->start();
  MPI_Allreduce(in.data(), out.data(), 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const SentCounts seen = monitor_->stop();
  long long msgs = 0;
  for (std::uint64_t m : seen.msgs) msgs += static_cast<long long>(m);
  const long long total = sum_over_ranks(msgs);
  if (monitor_->filtered()) EXPECT_EQ(total, 0) << "filtered mode counted the collective's messages";
  else EXPECT_GT(total, 0) << "the collective's messages were not counted";
}

}  // namespace
}  // namespace collscope
