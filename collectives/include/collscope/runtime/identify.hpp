// Which algorithm a library ran, from the traffic it was seen to send: the measured
// N x N matrix of bytes and of messages (row = sender, as Open MPI's monitoring counts
// them) against the exact theory of every hand-written algorithm of the collective at
// the same N, count, dtype and root. A candidate matches when both of its matrices equal
// the measured ones cell for cell; several can (at N = 2 every allreduce but the
// segmented ones sends the same), and then all are named. With none, the closest is the
// candidate with the fewest bytes off, then the fewest messages off, summed over cells.
//
// Traffic names a class of algorithms, not one implementation: Open MPI's linear,
// linear-with-sync and pairwise all-to-all send every peer its block once, in the same
// bytes and messages, and are all the pairwise candidate here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collscope/coll_args.hpp"
#include "collscope/collective.hpp"
#include "collscope/theory.hpp"

namespace collscope {

// The segment size a vendor row's candidates assume when no --segment was given: one
// segment per message, as Open MPI's fixed decision runs every algorithm (segsize 0).
inline constexpr std::size_t kUnsegmented = std::size_t{1} << 62;

struct TrafficMatrix {
  int nranks = 0;
  std::vector<std::uint64_t> bytes, msgs;  // N x N, row = sender, column = receiver
};

struct Candidate {
  std::string name;  // "ring"
  TheoryFn theory = nullptr;
};

struct Identification {
  std::vector<std::string> matches;  // every candidate that fits exactly, in list order
  std::string closest;               // the best candidate (the first match, when any)
  std::uint64_t off_bytes = 0;       // its distance: summed |measured - theory| over cells
  std::uint64_t off_msgs = 0;

  bool matched() const { return !matches.empty(); }
  // "ring", "ring|halving_doubling", or "unmatched".
  std::string name() const;
};

// The sent side of a theory: row r is what rank r sends to each peer.
TrafficMatrix theory_matrix(TheoryFn theory, int nranks, const CollArgs& args);

// Every hand-written algorithm of `collective`, in algorithms.def order.
std::vector<Candidate> hand_written_candidates(Collective collective);

Identification identify_algorithm(const TrafficMatrix& measured,
                                  std::span<const Candidate> candidates, const CollArgs& args);

}  // namespace collscope
