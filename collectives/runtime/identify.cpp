// Which algorithm a library ran, from its traffic (collscope/runtime/identify.hpp).
#include "collscope/runtime/identify.hpp"

#include <tuple>

#include "collscope/runtime/algorithm.hpp"

namespace collscope {
namespace {

std::uint64_t distance(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::uint64_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
  return d;
}

}  // namespace

std::string Identification::name() const {
  if (matches.empty()) return "unmatched";
  std::string s;
  for (const std::string& m : matches) s += (s.empty() ? "" : "|") + m;
  return s;
}

TrafficMatrix theory_matrix(TheoryFn theory, int nranks, const CollArgs& args) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  TrafficMatrix t{nranks, std::vector<std::uint64_t>(n * n, 0), std::vector<std::uint64_t>(n * n, 0)};
  for (int r = 0; r < nranks; ++r) {
    const std::vector<RankVolume> row = theory_per_peer(theory, r, nranks, args);
    for (std::size_t p = 0; p < n; ++p) {
      t.bytes[static_cast<std::size_t>(r) * n + p] = row[p].sent_bytes;
      t.msgs[static_cast<std::size_t>(r) * n + p] = row[p].sent_msgs;
    }
  }
  return t;
}

std::vector<Candidate> hand_written_candidates(Collective collective) {
  std::vector<Candidate> out;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == collective && !a.is_vendor()) out.push_back({std::string(a.name), a.theory});
  return out;
}

Identification identify_algorithm(const TrafficMatrix& measured,
                                  std::span<const Candidate> candidates, const CollArgs& args) {
  Identification id;
  bool have_best = false;
  for (const Candidate& c : candidates) {
    const TrafficMatrix t = theory_matrix(c.theory, measured.nranks, args);
    const std::uint64_t bytes = distance(measured.bytes, t.bytes), msgs = distance(measured.msgs, t.msgs);
    if (bytes == 0 && msgs == 0) id.matches.push_back(c.name);
    if (!have_best || std::tie(bytes, msgs) < std::tie(id.off_bytes, id.off_msgs)) {
      id.closest = c.name;
      id.off_bytes = bytes;
      id.off_msgs = msgs;
      have_best = true;
    }
  }
  return id;
}

}  // namespace collscope
