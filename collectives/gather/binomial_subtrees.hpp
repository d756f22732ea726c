// What the binomial gather and the binomial scatter (its mirror) share: a rank's place
// in the binomial tree rooted at args.root (patterns/binomial.hpp) and its subtrees'
// blocks, which travel packed in virtual-rank order.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "collscope/patterns/binomial.hpp"
#include "collscope/schedule.hpp"

namespace collscope::detail {

struct BinomialRank {
  int v;                      // virtual rank, (rank - root) mod N
  int parent;                 // real rank; -1 at the root
  std::vector<int> children;  // virtual ranks, farthest first
  patterns::Block own;        // this rank's block
};
BinomialRank binomial_rank(const Plan& p);

// Bytes of the blocks of a run of virtual ranks, packed in virtual order.
std::size_t run_bytes(const Plan& p, patterns::RankRun virt);

// The scratch in which this rank stages its subtree's blocks (an inner rank) or its one
// child subtree that wraps past block N-1 (the root), declared here; none (an unused
// reference) where it needs none (patterns::binomial_staging_elems).
BufRef staging_scratch(Plan& p, int v);

// The real-rank pieces of a run of virtual ranks (the second one empty unless the run
// wraps past block N-1), each with the byte offset it takes in the run packed.
struct Piece {
  patterns::Block block;
  std::size_t packed_at;
};
std::array<Piece, 2> packed_pieces(const Plan& p, patterns::RankRun virt);

}  // namespace collscope::detail
