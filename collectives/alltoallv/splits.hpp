// Checks on the split matrix the all-to-all-v algorithms share, and the byte offsets of
// one rank's parts (collective.hpp: send = row packed by destination, receive = column
// packed by source).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "collscope/collective.hpp"
#include "collscope/comm.hpp"

namespace collscope::detail {

inline std::optional<std::string> split_matrix_check(int nranks, const CollArgs& a) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  if (a.splits.size() == n * n) return std::nullopt;
  return "alltoallv needs an N x N split matrix: " + std::to_string(a.splits.size()) +
         " entries at " + std::to_string(nranks) + " ranks";
}

// Byte offset of the part for each destination in `rank`'s send buffer.
inline std::vector<std::size_t> send_part_offsets(const CollArgs& a, int rank, int n) {
  std::vector<std::size_t> off(static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (int j = 0; j < n; ++j) {
    off[static_cast<std::size_t>(j)] = at;
    at += static_cast<std::size_t>(split_at(a, rank, j, n)) * a.elem_size();
  }
  return off;
}

// Byte offset of the part from each source in `rank`'s receive buffer.
inline std::vector<std::size_t> recv_part_offsets(const CollArgs& a, int rank, int n) {
  std::vector<std::size_t> off(static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) {
    off[static_cast<std::size_t>(i)] = at;
    at += static_cast<std::size_t>(split_at(a, i, rank, n)) * a.elem_size();
  }
  return off;
}

}  // namespace collscope::detail
