// Closed-form volume of every hand-written algorithm (algorithms.def) and of pingpong's
// probes, written apart from the schedules and sharing no code with them
// (collectives/theory/, which depends only on the collective's buffer layout and the
// block rule): the bytes and messages
// one rank sends to and receives from each peer in one call, for any N, count, root,
// segment size and split matrix, uneven blocks included. A zero-byte data message is
// never sent and so never counted; a signal is a message of zero bytes.
//
// The counted volume (what an executor hands to the wire) and the planned volume (what
// the schedule says) must both equal it, byte for byte and message for message.
#pragma once

#include <span>
#include <vector>

#include "collscope/coll_args.hpp"
#include "collscope/patterns/tournament.hpp"
#include "collscope/volume.hpp"

namespace collscope {

// Adds `rank`'s volume to per_peer[p] for every peer p (per_peer has nranks entries).
using TheoryFn = void (*)(int rank, int nranks, const CollArgs&, std::span<RankVolume> per_peer);

// Per peer and in total, for convenience.
std::vector<RankVolume> theory_per_peer(TheoryFn f, int rank, int nranks, const CollArgs& a);
RankVolume theory_total(TheoryFn f, int rank, int nranks, const CollArgs& a);

namespace theory {

#define COLLSCOPE_ALGORITHM(collective, name, summary) \
  void collective##_##name(int rank, int nranks, const CollArgs&, std::span<RankVolume>);
#define COLLSCOPE_VENDOR(collective, library, summary)
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR

// pingpong's probes (point to point, not collectives), as N x N matrices: row r, column
// p holds r's counts with peer p. One message of `bytes` each way per pair (a 0-byte
// size is a signal each way); nobody else moves anything.
//   pair   one round trip of a and b
//   round  a round of disjoint pairs at once (patterns/tournament.hpp), each as if alone
//   shift  ring shift k: every rank sends to r+k and receives from r-k (at k = N/2 both
//          in the same cell)
std::vector<RankVolume> pingpong_pair(patterns::RankPair p, std::uint64_t bytes, int nranks);
std::vector<RankVolume> pingpong_round(std::span<const patterns::RankPair> round,
                                       std::uint64_t bytes, int nranks);
std::vector<RankVolume> pingpong_shift(int k, std::uint64_t bytes, int nranks);

}  // namespace theory
}  // namespace collscope
