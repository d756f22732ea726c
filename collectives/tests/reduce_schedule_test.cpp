// The reduce theory: the binomial broadcast's, with send and receive swapped.
#include <gtest/gtest.h>

#include "collscope/theory.hpp"
#include "collscope/theory.hpp"

namespace collscope {
namespace {

TEST(ReduceTheory, BinomialIsTheBroadcastReversed) {
  for (int n = 1; n <= 12; ++n)
    for (int root = 0; root < n; ++root)
      for (std::size_t count : {0u, 1u, 7u, 1000u}) {
        CollArgs a;
        a.count = count;
        a.root = root;
        for (int r = 0; r < n; ++r) {
          const RankVolume up = theory_total(theory::reduce_binomial, r, n, a);
          const RankVolume down = theory_total(theory::broadcast_binomial, r, n, a);
          EXPECT_EQ(up.sent_bytes, down.recv_bytes);
          EXPECT_EQ(up.sent_msgs, down.recv_msgs);
          EXPECT_EQ(up.recv_bytes, down.sent_bytes);
          EXPECT_EQ(up.recv_msgs, down.sent_msgs);
        }
      }
}

TEST(ReduceTheory, RootReceivesOneVectorPerChild) {
  CollArgs a;
  a.count = 256;
  a.root = 5;
  EXPECT_EQ(theory_total(theory::reduce_binomial, 5, 8, a).recv_bytes, 3 * a.bytes());
  EXPECT_EQ(theory_total(theory::reduce_binomial, 5, 8, a).sent_msgs, 0u);
  EXPECT_EQ(theory_total(theory::reduce_binomial, 6, 8, a).sent_bytes, a.bytes());  // virtual 1: a leaf
  EXPECT_EQ(theory_total(theory::reduce_binomial, 6, 8, a).recv_msgs, 0u);
}

}  // namespace
}  // namespace collscope
