// Every allreduce algorithm at this process count (the test runs under mpiexec with
// 1..8 ranks) over counts {0, 1, N-1, N, N+1, 100003}, every dtype and op, in place and
// out of place: the result must be exact on every rank, and every rank's measured bytes
// and messages must equal the theory.
#include <gtest/gtest.h>
#include <mpi.h>

#include <sstream>
#include <string>
#include <vector>

#include "collscope/algorithm.hpp"
#include "collscope/counting_transport.hpp"
#include "collscope/mpi_transport.hpp"
#include "collscope/verify/data.hpp"

namespace collscope {
namespace {

constexpr std::size_t kPrimeCount = 100003;  // a prime above 10^5

struct Case {
  std::size_t count;
  DataType dtype;
  ReduceOp op;
  bool in_place;
  std::size_t segment_bytes;
  std::string describe(int n) const {
    std::ostringstream s;
    s << "N=" << n << " count=" << count << " " << dtype_name(dtype) << " " << op_name(op)
      << (in_place ? " in-place" : " out-of-place") << " segment=" << segment_bytes;
    return s.str();
  }
};

std::vector<Case> cases_for(int n) {
  std::vector<Case> out;
  const std::size_t small[] = {0, 1, static_cast<std::size_t>(n - 1), static_cast<std::size_t>(n),
                               static_cast<std::size_t>(n + 1)};
  for (bool in_place : {false, true}) {
    for (std::size_t count : small)  // the whole dtype x op matrix on small counts
      for (DataType t : kAllDataTypes)
        for (ReduceOp op : kAllReduceOps)
          if (op_valid_for(op, t)) out.push_back({count, t, op, in_place, 8});
    // The large prime count: every dtype with sum, every op with float, many segments.
    for (DataType t : kAllDataTypes) out.push_back({kPrimeCount, t, ReduceOp::sum, in_place, 4096});
    for (ReduceOp op : kAllReduceOps)
      out.push_back({kPrimeCount, DataType::float32, op, in_place, kDefaultSegmentBytes});
  }
  return out;
}

class AllreduceTest : public ::testing::TestWithParam<const char*> {
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

  int rank_ = 0, n_ = 1;
  MPI_Comm vendor_ = MPI_COMM_NULL;
};

TEST_P(AllreduceTest, ExactResultAndVolumeEqualsTheory) {
  const Algorithm* algo = find_algorithm("allreduce", GetParam());
  ASSERT_NE(algo, nullptr);
  MpiTransport mpi(MPI_COMM_WORLD);
  CountingTransport counting(mpi);
  Comm comm(counting, vendor_);
  for (const Case& c : cases_for(n_)) {
    const std::size_t bytes = c.count * dtype_size(c.dtype);
    std::vector<std::byte> send(bytes + 1), recv(bytes + 1), want(bytes + 1);
    const verify::DataSpec ds{42, c.dtype, c.op, n_};
    verify::fill_input(c.in_place ? recv.data() : send.data(), c.count, ds, rank_);
    CollArgs a;
    a.sendbuf = c.in_place ? recv.data() : send.data();
    a.recvbuf = recv.data();
    a.count = c.count;
    a.dtype = c.dtype;
    a.op = c.op;
    a.segment_bytes = c.segment_bytes;
    counting.reset();
    run_collective(comm, *algo, a);

    verify::fill_allreduce_expected(want.data(), c.count, ds);
    const verify::Mismatch m = verify::compare(recv.data(), want.data(), c.count, c.dtype);
    EXPECT_EQ(sum_over_ranks(static_cast<long long>(m.wrong)), 0)
        << c.describe(n_) << ": wrong elements (rank " << rank_ << " first bad index "
        << m.first_index << " got " << m.got << " want " << m.want << ")";
    EXPECT_EQ(sum_over_ranks(mpi.open_requests()), 0) << c.describe(n_) << ": requests left open";
    if (algo->vendor) continue;
    const RankVolume got = counting.total(), theory = algo->theory(rank_, n_, a);
    EXPECT_EQ(sum_over_ranks(got == theory ? 0 : 1), 0)
        << c.describe(n_) << ": rank " << rank_ << " measured " << got.sent_bytes << " B/"
        << got.sent_msgs << " sent, " << got.recv_bytes << " B/" << got.recv_msgs
        << " received; theory " << theory.sent_bytes << "/" << theory.sent_msgs << ", "
        << theory.recv_bytes << "/" << theory.recv_msgs;
  }
}

// Every allreduce algorithm in the table, hand-written and vendor alike.
std::vector<const char*> allreduce_names() {
  std::vector<const char*> names;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == "allreduce") names.push_back(a.name.data());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllreduceTest, ::testing::ValuesIn(allreduce_names()),
                         [](const auto& p) { return std::string(p.param); });

}  // namespace
}  // namespace collscope
