// Which algorithm ran, from its traffic (collscope/runtime/identify.hpp), without MPI: every
// hand-written algorithm's own exact traffic names it (alone, or with the algorithms
// that send exactly the same), and a deliberately wrong theory makes the match fail,
// naming the nearest candidate and how far off it is.
#include <gtest/gtest.h>

#include <algorithm>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/runtime/identify.hpp"

namespace collscope {
namespace {

CollArgs args_of(std::size_t count, int root = 0) {
  CollArgs a;
  a.count = count;
  a.dtype = DataType::float32;
  a.root = root;
  a.segment_bytes = kUnsegmented;
  return a;
}

bool names(const Identification& id, std::string_view name) {
  return std::find(id.matches.begin(), id.matches.end(), name) != id.matches.end();
}

// The theory of allreduce_ring with one more byte to the last rank's next peer: a twin
// that is wrong by the smallest amount there is.
void ring_one_byte_off(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  theory::allreduce_ring(r, n, a, pp);
  if (r == n - 1) pp[0].sent_bytes += 1;
}

// ... and one message more from rank 0, none of its bytes.
void ring_one_message_off(int r, int n, const CollArgs& a, std::span<RankVolume> pp) {
  theory::allreduce_ring(r, n, a, pp);
  if (r == 0) pp[1 % static_cast<std::size_t>(n)].sent_msgs += 1;
}

TEST(Identify, EveryHandWrittenAlgorithmNamesItselfFromItsOwnTraffic) {
  for (const Algorithm& algo : all_algorithms()) {
    if (algo.is_vendor() || algo.collective == Collective::alltoallv) continue;  // needs a split
    const std::vector<Candidate> candidates = hand_written_candidates(algo.collective);
    for (int n : {2, 3, 4, 5, 8})
      for (std::size_t count : {std::size_t{1}, std::size_t{16}, std::size_t{1000}}) {
        const CollArgs a = args_of(count, n > 1 ? 1 : 0);
        const TrafficMatrix traffic = theory_matrix(algo.theory, n, a);
        const Identification id = identify_algorithm(traffic, candidates, a);
        EXPECT_TRUE(names(id, algo.name)) << algo.full_name() << " N=" << n << " count=" << count
                                          << ": " << id.name();
        EXPECT_EQ(id.off_bytes, 0u);
        EXPECT_EQ(id.off_msgs, 0u);
      }
  }
}

TEST(Identify, DistinctTrafficNamesOneAlgorithm) {
  const CollArgs a = args_of(1 << 16);
  const std::vector<Candidate> allreduce = hand_written_candidates(Collective::allreduce);
  // At N = 8 recursive doubling sends the whole vector three times: nothing else does.
  const Identification rd = identify_algorithm(
      theory_matrix(theory::allreduce_recursive_doubling, 8, a), allreduce, a);
  EXPECT_EQ(rd.name(), "recursive_doubling");
  // Open MPI's Rabenseifner and MPICH's halving-doubling send as many bytes per rank, to
  // other peers: per-peer traffic tells them apart.
  const Identification rab =
      identify_algorithm(theory_matrix(theory::allreduce_rabenseifner, 4, a), allreduce, a);
  EXPECT_EQ(rab.name(), "rabenseifner");
}

TEST(Identify, AtTwoRanksTheAlgorithmsThatSendAlikeAreAllNamed) {
  const CollArgs a = args_of(1024);
  const Identification id = identify_algorithm(theory_matrix(theory::allreduce_ring, 2, a),
                                               hand_written_candidates(Collective::allreduce), a);
  EXPECT_TRUE(names(id, "ring"));
  EXPECT_TRUE(names(id, "halving_doubling"));  // one half each way, twice, at N = 2
  EXPECT_TRUE(names(id, "rabenseifner"));
  EXPECT_FALSE(names(id, "recursive_doubling"));  // the whole vector in one message
  EXPECT_EQ(id.name().find('|') != std::string::npos, true);
}

TEST(Identify, AWrongTheoryMakesTheMatchFail) {
  const CollArgs a = args_of(1000);
  for (int n : {3, 5, 8}) {
    const TrafficMatrix ring = theory_matrix(theory::allreduce_ring, n, a);
    const std::vector<Candidate> wrong = {{"ring_one_byte_off", ring_one_byte_off},
                                          {"ring_one_message_off", ring_one_message_off}};
    const Identification id = identify_algorithm(ring, wrong, a);
    EXPECT_FALSE(id.matched()) << "N=" << n << ": " << id.name();
    EXPECT_EQ(id.name(), "unmatched");
    EXPECT_EQ(id.closest, "ring_one_message_off");  // no byte off beats one byte off
    EXPECT_EQ(id.off_bytes, 0u);
    EXPECT_EQ(id.off_msgs, 1u);
    // With the right theory among them, it is the one named.
    std::vector<Candidate> with_right = wrong;
    with_right.push_back({"ring", theory::allreduce_ring});
    EXPECT_EQ(identify_algorithm(ring, with_right, a).name(), "ring");
  }
}

TEST(Identify, UnmatchedTrafficGivesTheClosestAndItsDistance) {
  const CollArgs a = args_of(1 << 10);
  // Direct allreduce at N = 4 sends 3 D per rank in 3 messages; recursive doubling 2 D in 2.
  TrafficMatrix traffic = theory_matrix(theory::allreduce_direct, 4, a);
  const std::vector<Candidate> only_rd = {{"recursive_doubling", theory::allreduce_recursive_doubling}};
  const Identification id = identify_algorithm(traffic, only_rd, a);
  EXPECT_EQ(id.name(), "unmatched");
  EXPECT_EQ(id.closest, "recursive_doubling");
  EXPECT_EQ(id.off_bytes, 4u * a.bytes());  // each rank's third vector
  EXPECT_EQ(id.off_msgs, 4u);
}

}  // namespace
}  // namespace collscope
