// pingpong's probes (theory.hpp): one message each way per pair, counted as the
// counting transport counts it.
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

}  // namespace

std::vector<RankVolume> pingpong_pair(patterns::RankPair p, std::uint64_t bytes, int nranks) {
  std::vector<RankVolume> t = empty_matrix(nranks);
  RankVolume leg;
  count_message(leg, leg, bytes);  // each of a and b sends one and receives one
  t[cell(p.a, p.b, nranks)] = leg;
  t[cell(p.b, p.a, nranks)] = leg;
  return t;
}

std::vector<RankVolume> pingpong_round(std::span<const patterns::RankPair> round,
                                       std::uint64_t bytes, int nranks) {
  std::vector<RankVolume> t = empty_matrix(nranks);
  for (const patterns::RankPair& p : round) {
    const std::vector<RankVolume> one = pingpong_pair(p, bytes, nranks);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] += one[i];
  }
  return t;
}

std::vector<RankVolume> pingpong_shift(int k, std::uint64_t bytes, int nranks) {
  std::vector<RankVolume> t = empty_matrix(nranks);
  for (int r = 0; r < nranks; ++r)
    count_message(t[cell(r, (r + k) % nranks, nranks)], t[cell(r, (r - k + nranks) % nranks, nranks)],
                  bytes);
  return t;
}

}  // namespace collscope::theory
