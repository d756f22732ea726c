// The point-to-point patterns of the catalogue (algorithms.def, COLLSCOPE_P2P): not
// collectives, but ranks exchanging one message each way with a peer, which pingpong
// measures (--pattern). A pattern at N ranks is a list of steps; a step is what runs at
// once: disjoint pairs, each doing one round trip, or a ring shift, every rank sending to
// r+k and receiving from r-k. Its schedule is one rank's part of one step, its theory the
// step's exact N x N volume.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "collscope/patterns/tournament.hpp"

namespace collscope {

// In the order of algorithms.def's COLLSCOPE_P2P lines.
enum class P2pPattern : std::uint8_t { pairs, rounds, ring };

struct P2pStep {
  // pairs, rounds: disjoint pairs, each a round trip that a starts (a < b, except for
  // the one pair a command line names, pingpong --pairs 3,1)
  std::vector<patterns::RankPair> pairs;
  int shift = 0;                          // ring: k, 1 .. N-1
};

// A rank's pair in a step of pairs, or nullptr (it rests).
inline const patterns::RankPair* pair_of(const P2pStep& step, int rank) {
  for (const patterns::RankPair& p : step.pairs)
    if (p.a == rank || p.b == rank) return &p;
  return nullptr;
}

// A rank's peer in a step of pairs: the other rank of its pair, or -1 (it rests).
inline int partner_in(const P2pStep& step, int rank) {
  const patterns::RankPair* p = pair_of(step, rank);
  return !p ? -1 : p->a == rank ? p->b : p->a;
}

}  // namespace collscope
