// Closed-form volume of every hand-written algorithm (algorithms.def) and of every step
// of the point-to-point patterns pingpong measures, written apart from the schedules and
// sharing no code with them (collectives/theory/, which depends only on the collective's
// buffer layout and the block rule): the bytes and messages one rank sends to and
// receives from each peer in one call, for any N, count, root, segment size and split
// matrix, uneven blocks included. A zero-byte data message is never sent and so never
// counted; a signal is a message of zero bytes.
//
// The counted volume (what an executor hands to the wire) and the planned volume (what
// the schedule says) must both equal it, byte for byte and message for message.
#pragma once

#include <span>
#include <vector>

#include "collscope/coll_args.hpp"
#include "collscope/p2p.hpp"
#include "collscope/volume.hpp"

namespace collscope {

// Adds `rank`'s volume to per_peer[p] for every peer p (per_peer has nranks entries).
using TheoryFn = void (*)(int rank, int nranks, const CollArgs&, std::span<RankVolume> per_peer);

// Per peer and in total, for convenience.
std::vector<RankVolume> theory_per_peer(TheoryFn f, int rank, int nranks, const CollArgs& a);
RankVolume theory_total(TheoryFn f, int rank, int nranks, const CollArgs& a);

namespace theory {

// theory::<collective>_<name>, a TheoryFn, for every hand-written algorithm. And
// theory::p2p_<name> for the point-to-point patterns (COLLSCOPE_P2P, collscope/p2p.hpp):
// the volume of one step as an N x N matrix, row r, column p holding r's counts with
// peer p. One message of `bytes` each way per pair (a 0-byte size is a signal each way);
// nobody else moves anything.
//   pairs, rounds  every pair of the step does one round trip, each as if alone
//   ring           shift k: every rank sends to r+k and receives from r-k (at k = N/2
//                  both in the same cell)
#define COLLSCOPE_ALGORITHM(collective, name, summary) \
  void collective##_##name(int rank, int nranks, const CollArgs&, std::span<RankVolume>);
#define COLLSCOPE_VENDOR(collective, library, summary)
#define COLLSCOPE_P2P(name, summary) \
  std::vector<RankVolume> p2p_##name(const P2pStep& step, std::uint64_t bytes, int nranks);
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR
#undef COLLSCOPE_P2P

}  // namespace theory
}  // namespace collscope
