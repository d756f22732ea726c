// The scatter theory: the gather's, with send and receive swapped.
#include <gtest/gtest.h>

#include "collscope/theory.hpp"
#include "collscope/theory.hpp"

namespace collscope {
namespace {

RankVolume swapped(RankVolume v) {
  return {v.recv_bytes, v.recv_msgs, v.sent_bytes, v.sent_msgs};
}

TEST(ScatterTheory, IsTheGatherReversed) {
  for (int n = 1; n <= 12; ++n)
    for (int root = 0; root < n; ++root)
      for (std::size_t count : {0u, 1u, 5u, 12u, 13u, 1001u}) {
        CollArgs a;
        a.count = count;
        a.root = root;
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(theory_total(theory::scatter_linear, r, n, a), swapped(theory_total(theory::gather_linear, r, n, a)));
          EXPECT_EQ(theory_total(theory::scatter_binomial, r, n, a), swapped(theory_total(theory::gather_binomial, r, n, a)));
        }
      }
}

TEST(ScatterTheory, BinomialLeafReceivesItsBlockOnly) {
  CollArgs a;
  a.count = 10;  // blocks over 4: 3 3 2 2
  a.root = 2;    // virtual 1 = real 3: a leaf
  const RankVolume v = theory_total(theory::scatter_binomial, 3, 4, a);
  EXPECT_EQ(v.recv_bytes, 2 * 4u);
  EXPECT_EQ(v.recv_msgs, 1u);
  EXPECT_EQ(v.sent_msgs, 0u);
  // virtual 2 = real 0, subtree real {0, 1}: 6 elements, forwards block 1 to real 1
  const RankVolume inner = theory_total(theory::scatter_binomial, 0, 4, a);
  EXPECT_EQ(inner.recv_bytes, 6 * 4u);
  EXPECT_EQ(inner.sent_bytes, 3 * 4u);
}

}  // namespace
}  // namespace collscope
