// The point-to-point patterns' steps (theory.hpp): one message each way per pair or per
// ring link, counted as the executor counts it.
#include <cstddef>

#include "collscope/theory.hpp"

namespace collscope::theory {
namespace {

// One message of `bytes` (a signal when bytes is 0), as its sender (`out`) and its
// receiver (`in`) count it.
void count_message(RankVolume& out, RankVolume& in, std::uint64_t bytes) {
  if (bytes > 0) {
    out.send(bytes);
    in.recv(bytes);
  } else {
    out.signal_sent();
    in.signal_received();
  }
}

std::size_t cell(int row, int column, int nranks) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(nranks) +
         static_cast<std::size_t>(column);
}

std::vector<RankVolume> empty_matrix(int nranks) {
  return std::vector<RankVolume>(static_cast<std::size_t>(nranks) * static_cast<std::size_t>(nranks));
}

// Every pair's round trip: a and b each send one message and receive one.
std::vector<RankVolume> round_trips(const P2pStep& step, std::uint64_t bytes, int nranks) {
  std::vector<RankVolume> t = empty_matrix(nranks);
  RankVolume leg;
  count_message(leg, leg, bytes);
  for (const patterns::RankPair& p : step.pairs) {
    t[cell(p.a, p.b, nranks)] += leg;
    t[cell(p.b, p.a, nranks)] += leg;
  }
  return t;
}

}  // namespace

std::vector<RankVolume> p2p_pairs(const P2pStep& step, std::uint64_t bytes, int nranks) {
  return round_trips(step, bytes, nranks);
}

std::vector<RankVolume> p2p_rounds(const P2pStep& step, std::uint64_t bytes, int nranks) {
  return round_trips(step, bytes, nranks);
}

std::vector<RankVolume> p2p_ring(const P2pStep& step, std::uint64_t bytes, int nranks) {
  std::vector<RankVolume> t = empty_matrix(nranks);
  const int k = step.shift;
  for (int r = 0; r < nranks; ++r)
    count_message(t[cell(r, (r + k) % nranks, nranks)], t[cell(r, (r - k + nranks) % nranks, nranks)],
                  bytes);
  return t;
}

}  // namespace collscope::theory
