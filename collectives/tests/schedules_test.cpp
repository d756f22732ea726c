// Every hand-written algorithm's schedules, checked without communication
// (collscope/schedule_check.hpp): for N = 1..16, counts {0, 1, N-1, N, N+1, a prime},
// two element sizes, every root of the rooted collectives (three at the large count),
// in place and out of place, avg where it applies, small segments so the pipelined
// algorithms run many segments, and the all-to-all-v split patterns: sends match
// receives step by step, references stay inside their buffers, no two concurrent
// operations write the same bytes, and the planned volume equals the closed-form theory
// on every rank, per peer.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "collscope/schedule_check.hpp"
#include "collscope/verify/splits.hpp"

namespace collscope {
namespace {

constexpr int kMaxRanks = 16;
constexpr std::size_t kPrimeCount = 100003;   // a prime above 10^5
constexpr std::size_t kPrimePerPeer = 1009;   // all-to-all counts are per peer

struct Call {
  CollArgs args;
  bool in_place = false;
  std::string describe(int n) const {
    std::ostringstream s;
    s << "N=" << n << " count=" << args.count << " " << dtype_name(args.dtype) << " "
      << op_name(args.op) << " root=" << args.root << (in_place ? " in-place" : "")
      << " segment=" << args.segment_bytes << " splits=" << args.splits.size();
    return s.str();
  }
};

std::vector<int> roots(const CollectiveInfo& c, int n, bool large) {
  if (!c.rooted) return {0};
  if (large) return {0, n / 2, n - 1};
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  return all;
}

std::vector<Call> calls(const Algorithm& algo, int n) {
  const CollectiveInfo& c = algo.info();
  const bool per_peer = c.id == Collective::alltoall;
  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<Call> out;
  for (bool in_place : {false, true}) {
    if (in_place && c.in_place == InPlace::none) continue;
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, un - 1, un, un + 1,
                              per_peer ? kPrimePerPeer : kPrimeCount}) {
      const bool large = count > 1000;
      for (DataType t : {DataType::int8, DataType::float32})
        for (int root : roots(c, n, large)) {
          Call k;
          k.in_place = in_place;
          k.args.count = count;
          k.args.dtype = t;
          k.args.op = c.reduces && t == DataType::float32 ? ReduceOp::avg : ReduceOp::sum;
          k.args.root = root;
          k.args.segment_bytes = large ? 4096 : 8;
          out.push_back(k);
        }
    }
  }
  return out;
}

class Schedules : public ::testing::TestWithParam<const Algorithm*> {};

TEST_P(Schedules, MatchStayInBoundsHaveNoHazardsAndEqualTheory) {
  const Algorithm& algo = *GetParam();
  for (int n = 1; n <= kMaxRanks; ++n) {
    if (algo.collective == Collective::alltoallv) {
      for (auto pattern : {verify::SplitPattern::uniform, verify::SplitPattern::random,
                           verify::SplitPattern::skewed})
        for (std::uint64_t total : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t(n) + 1,
                                    std::uint64_t{kPrimeCount}}) {
          const std::vector<std::uint64_t> splits = verify::make_splits(pattern, total, n, 7 + total);
          Call k;
          k.args.splits = splits;
          const auto bad = check_schedules(algo, n, k.args, false);
          ASSERT_FALSE(bad) << algo.full_name() << " " << k.describe(n) << ": " << *bad;
        }
      continue;
    }
    for (const Call& k : calls(algo, n)) {
      const auto bad = check_schedules(algo, n, k.args, k.in_place);
      ASSERT_FALSE(bad) << algo.full_name() << " " << k.describe(n) << ": " << *bad;
    }
  }
}

// The checker itself must be able to fail: a schedule with each kind of mistake.
Steps unmatched_send(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (p.rank() == 0) s.send(1, Plan::send(), 4, tag);
  co_yield s.step("bad", 0);
}
Steps receive_one_step_late(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (p.rank() == 0) co_yield s.send(1, Plan::send(), 4, tag).step("send", 0);
  if (p.rank() == 1) co_yield s.recv(0, Plan::recv(), 4, tag).step("recv", 1);
}
Steps two_receives_same_bytes(Plan& p) {
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  if (p.rank() == 0) s.send(1, Plan::send(), 4, tag).send(1, Plan::send(), 4, tag);
  if (p.rank() == 1) s.recv(0, Plan::recv(), 4, tag).recv(0, Plan::recv(2), 4, tag);
  co_yield s.step("bad", 0);
}
Steps past_the_buffer(Plan& p) {
  StepBuilder s(p);
  co_yield s.copy(Plan::recv(4), Plan::send(), p.count() * p.elem()).step("bad", 0);
}
Steps overlap_into_next_receive(Plan& p) {
  const std::uint32_t tag = p.tag();
  const BufRef box = p.scratch(4);
  StepBuilder s(p);
  if (p.rank() == 1) {
    co_yield s.recv(0, box, 4, tag).reduce(Plan::recv(), Plan::send(), box, 4).step("r", 0, true);
    co_yield s.recv(0, box, 4, tag).step("r", 1);
  } else {
    co_yield s.send(1, Plan::send(), 4, tag).step("s", 0);
    co_yield s.send(1, Plan::send(), 4, tag).step("s", 1);
  }
}

// Rank 1 reduces a received block and then copies that block out: the ipc path, which
// reduces straight from the sender's memory, would never have put it there.
Steps read_after_consumed(Plan& p) {
  const std::uint32_t tag = p.tag();
  const BufRef box = p.scratch(4);
  StepBuilder s(p);
  if (p.rank() == 1) {
    co_yield s.recv(0, box, 4, tag).reduce(Plan::recv(), Plan::send(), box, 4).step("r", 0);
    co_yield s.copy(Plan::recv(4), box, 4).step("r", 1);
  } else {
    co_yield s.send(1, Plan::send(), 4, tag).step("s", 0);
  }
}

TEST(ScheduleChecker, FindsEachKindOfMistake) {
  const Algorithm& ring = *find_algorithm(Collective::allreduce, "ring");
  CollArgs a;
  a.count = 2;  // two floats: 8 bytes
  const std::pair<ScheduleFn, const char*> bad[] = {
      {unmatched_send, "do not match"},
      {receive_one_step_late, "do not match"},
      {two_receives_same_bytes, "two receives write the same bytes"},
      {past_the_buffer, "of the recv buffer"},
      {overlap_into_next_receive, "whose receive writes bytes they use"},
      {read_after_consumed, "reads received bytes that a reduction already consumed"},
  };
  for (const auto& [schedule, why] : bad) {
    Algorithm broken = ring;
    broken.schedule = schedule;
    const auto found = check_schedules(broken, 2, a, false);
    ASSERT_TRUE(found) << why;
    EXPECT_NE(found->find(why), std::string::npos) << *found;
  }
}

std::vector<const Algorithm*> hand_written() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : all_algorithms())
    if (a.schedule) out.push_back(&a);
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, Schedules, ::testing::ValuesIn(hand_written()),
                         [](const auto& p) { return p.param->full_name(); });

}  // namespace
}  // namespace collscope
