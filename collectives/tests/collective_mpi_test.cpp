// Every algorithm in the table at this process count (ctest runs it under mpiexec with
// 1..8 ranks, one collective per entry) over counts {0, 1, N-1, N, N+1, a prime}, every
// dtype (and op, for the reducing collectives), every root of the rooted ones, in place
// and out of place, the all-to-all-v split patterns: on every rank the result must be
// exact (bit for bit where data is only moved), no request may stay open, and the
// counted bytes and messages (what the executor handed to the transport) must equal the
// schedule's planned volume and the closed-form theory, per peer.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/collective.hpp"
#include "collscope/host_executor.hpp"
#include "collscope/transport_factory.hpp"
#include "collscope/verify/collective_data.hpp"
#include "collscope/verify/splits.hpp"
#include "test_transport.hpp"

namespace collscope {
namespace {

constexpr std::size_t kPrimeCount = 100003;     // a prime above 10^5
constexpr std::size_t kPrimePerPeer = 10007;    // all-to-all counts are per peer

struct Case {
  std::size_t count = 0;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  bool in_place = false;
  std::size_t segment_bytes = kDefaultSegmentBytes;
  std::vector<std::uint64_t> splits;  // all-to-all-v
  std::string split_name;

  std::string describe(int n) const {
    std::ostringstream s;
    s << "N=" << n << " count=" << count << " " << dtype_name(dtype) << " " << op_name(op)
      << " root=" << root << (in_place ? " in-place" : " out-of-place")
      << " segment=" << segment_bytes << (split_name.empty() ? "" : " split=" + split_name)
      << " transport=" << transport_name(test::transport());
    return s.str();
  }
};

std::vector<DataType> movement_dtypes_large() {
  return {DataType::int8, DataType::float16, DataType::float32};
}

// dtype x op pairs: every valid pair on small counts, a cheaper set on the large one.
std::vector<std::pair<DataType, ReduceOp>> type_ops(const CollectiveInfo& c, bool large) {
  std::vector<std::pair<DataType, ReduceOp>> out;
  if (!c.reduces) {
    for (DataType t : large ? movement_dtypes_large() : std::vector<DataType>(
                                                            std::begin(kAllDataTypes),
                                                            std::end(kAllDataTypes)))
      out.push_back({t, ReduceOp::sum});
    return out;
  }
  for (DataType t : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      if (op_valid_for(op, t) && (!large || op == ReduceOp::sum || t == DataType::float32))
        out.push_back({t, op});
  return out;
}

std::vector<Case> data_cases(const CollectiveInfo& c, int n) {
  const bool per_peer = c.id == Collective::alltoall;
  const std::size_t un = static_cast<std::size_t>(n);
  const std::vector<std::size_t> counts = {0, 1, un - 1, un, un + 1,
                                           per_peer ? kPrimePerPeer : kPrimeCount};
  std::vector<Case> out;
  int serial = 0;
  for (bool in_place : {false, true}) {
    if (in_place && c.in_place == InPlace::none) continue;
    for (std::size_t count : counts) {
      const bool large = count >= kPrimePerPeer;
      for (auto [t, op] : type_ops(c, large)) {
        // Rooted: the root cycles through every rank across the cases.
        const int root = c.rooted ? serial++ % n : 0;
        out.push_back({count, t, op, root, in_place, large ? std::size_t{4096} : std::size_t{8}, {}, ""});
      }
      if (c.rooted)  // and every root explicitly, once per count
        for (int root = 0; root < n; ++root)
          out.push_back({count, DataType::float32, ReduceOp::sum, root, in_place, 8, {}, ""});
    }
  }
  return out;
}

std::vector<Case> alltoallv_cases(int n) {
  std::vector<Case> out;
  const std::uint64_t totals[] = {0, 1, static_cast<std::uint64_t>(n) + 1, kPrimeCount};
  for (auto p : {verify::SplitPattern::uniform, verify::SplitPattern::random,
                 verify::SplitPattern::skewed})
    for (std::uint64_t total : totals)
      for (DataType t : {DataType::int8, DataType::float32, DataType::float64}) {
        Case k;
        k.dtype = t;
        k.splits = verify::make_splits(p, total, n, 7 + total);
        k.split_name = std::string(verify::split_pattern_name(p));
        out.push_back(std::move(k));
      }
  // A matrix with empty rows and columns: rank 0 sends nothing, nobody sends to rank N-1.
  Case holes;
  holes.splits.assign(static_cast<std::size_t>(n) * n, 3);
  for (int j = 0; j < n; ++j) holes.splits[static_cast<std::size_t>(j)] = 0;
  for (int i = 0; i < n; ++i) holes.splits[static_cast<std::size_t>(i) * n + (n - 1)] = 0;
  holes.split_name = "holes";
  out.push_back(holes);
  return out;
}

std::vector<Case> cases_for(const CollectiveInfo& c, int n) {
  if (!c.has_data) return std::vector<Case>(5);  // barrier: a few calls back to back
  if (c.id == Collective::alltoallv) return alltoallv_cases(n);
  return data_cases(c, n);
}

class CollectiveTest : public ::testing::TestWithParam<const Algorithm*> {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    MPI_Comm_dup(MPI_COMM_WORLD, &vendor_);
  }
  void TearDown() override { MPI_Comm_free(&vendor_); }

  // Sum over ranks of a local count (how many ranks saw a problem, or how many elements).
  long long sum_over_ranks(long long local) const {
    long long total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return total;
  }

  CollArgs args_for(const Case& k) const {
    return CollArgs{.count = k.count, .dtype = k.dtype, .op = k.op, .root = k.root,
                    .segment_bytes = k.segment_bytes, .splits = k.splits};
  }

  int rank_ = 0, n_ = 1;
  MPI_Comm vendor_ = MPI_COMM_NULL;
};

// "rank r with rank q: counted ... planned ... theory ...", or "" when all agree.
std::string volume_disagreement(int rank, const std::vector<RankVolume>& counted,
                                const std::vector<RankVolume>& planned,
                                const std::vector<RankVolume>& theory) {
  auto text = [](const RankVolume& v) {
    return std::to_string(v.sent_bytes) + " B/" + std::to_string(v.sent_msgs) + " sent, " +
           std::to_string(v.recv_bytes) + " B/" + std::to_string(v.recv_msgs) + " received";
  };
  for (std::size_t q = 0; q < counted.size(); ++q)
    if (!(counted[q] == planned[q]) || !(counted[q] == theory[q]))
      return "rank " + std::to_string(rank) + " with rank " + std::to_string(q) + ": counted " +
             text(counted[q]) + "; planned " + text(planned[q]) + "; theory " + text(theory[q]);
  return "";
}

TEST_P(CollectiveTest, ExactResultAndVolumeEqualsTheory) {
  const Algorithm& algo = *GetParam();
  const CollectiveInfo& info = algo.info();
  const auto transport = make_transport(test::transport(), MPI_COMM_WORLD);
  HostExecutor executor(*transport);
  Comm comm(executor, vendor_);
  for (const Case& k : cases_for(info, n_)) {
    CollArgs a = args_for(k);
    if (call_problem(algo, n_, a, k.in_place)) continue;  // e.g. scratch limits
    verify::CallBuffers buffers(info, a, k.in_place, rank_, n_);
    const verify::DataSpec ds = verify::data_spec_for(info, 42, k.dtype, k.op, n_);
    // The second call is the same call again: the executor replays what it kept of the
    // first (when it kept it), and must get the same result and the same counts.
    for (const char* round : {"first call", "same call again"}) {
      verify::fill_collective_input(info, a, ds, rank_);
      executor.traffic().reset();
      const std::uint64_t replays = executor.replays();
      run_collective(comm, algo, a);
      const bool replay_expected =
          round[0] == 's' && !algo.is_vendor() && a.count <= static_cast<std::size_t>(n_) + 1;
      if (replay_expected) {
        EXPECT_EQ(sum_over_ranks(executor.replays() == replays + 1 ? 0 : 1), 0)
            << k.describe(n_) << ": a small call made again was not replayed";
      }

      std::vector<std::byte> want(buffers.recv_count() * a.elem_size() + 1);
      verify::fill_collective_expected(info, want.data(), a, ds, rank_);
      const verify::Mismatch m =
          verify::compare(a.recvbuf, want.data(), buffers.recv_count(), k.dtype);
      EXPECT_EQ(sum_over_ranks(static_cast<long long>(m.wrong)), 0)
          << k.describe(n_) << ", " << round << ": wrong elements (rank " << rank_
          << " first bad index " << m.first_index << " got " << m.got << " want " << m.want << ")";
      EXPECT_EQ(sum_over_ranks(open_requests(*transport)), 0)
          << k.describe(n_) << ", " << round << ": requests left open";
      if (algo.is_vendor()) continue;
      const std::string disagreement = volume_disagreement(
          rank_, executor.traffic().per_peer(), planned_volume(algo, rank_, n_, a, k.in_place),
          theory_per_peer(algo.theory, rank_, n_, a));
      EXPECT_EQ(sum_over_ranks(disagreement.empty() ? 0 : 1), 0)
          << k.describe(n_) << ", " << round << ": " << disagreement;
    }
  }
}

// A barrier must hold every rank until the last one arrives: each round one rank (in
// turn) arrives 3 ms late, and no rank may leave before that rank entered. Times come
// from the one monotonic clock all processes of this machine share.
class BarrierTest : public CollectiveTest {};

TEST_P(BarrierTest, HoldsEveryRankUntilTheLastArrives) {
  const Algorithm& algo = *GetParam();
  const auto transport = make_transport(test::transport(), MPI_COMM_WORLD);
  HostExecutor executor(*transport);
  Comm comm(executor, vendor_);
  auto now_us = [] {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  long long early = 0;
  for (int round = 0; round < 3 * n_; ++round) {
    const int late = round % n_;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == late) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    const double entered = now_us();
    run_collective(comm, algo, CollArgs{});
    const double left = now_us();
    double late_entered = entered;
    MPI_Bcast(&late_entered, 1, MPI_DOUBLE, late, MPI_COMM_WORLD);
    early += left < late_entered ? 1 : 0;
  }
  EXPECT_EQ(sum_over_ranks(early), 0) << "ranks left the barrier before the last one arrived";
}

// Every algorithm in the table, or those of one collective.
std::vector<const Algorithm*> algorithms() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : all_algorithms())
    if (!a.needs_device()) out.push_back(&a);  // host memory here; NCCL's own: GPU tests
  return out;
}

std::vector<const Algorithm*> barriers() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == Collective::barrier) out.push_back(&a);
  return out;
}

std::string test_name(const ::testing::TestParamInfo<const Algorithm*>& p) {
  return p.param->full_name();
}

INSTANTIATE_TEST_SUITE_P(Algorithms, CollectiveTest, ::testing::ValuesIn(algorithms()), test_name);
INSTANTIATE_TEST_SUITE_P(Barriers, BarrierTest, ::testing::ValuesIn(barriers()),
                         test_name);

}  // namespace
}  // namespace collscope
