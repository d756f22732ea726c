// The scratch check the all-to-all algorithms share: the bytes an algorithm needs per
// rank against --max-scratch, refused before any message is sent.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "collscope/comm.hpp"

namespace collscope::detail {

inline std::optional<std::string> alltoall_scratch_check(const char* algorithm,
                                                         std::size_t need, int nranks,
                                                         const CollArgs& a) {
  if (need <= a.scratch_limit) return std::nullopt;
  return std::string("alltoall/") + algorithm + " needs " + std::to_string(need) +
         " B of scratch per rank at " + std::to_string(nranks) + " ranks, above the limit of " +
         std::to_string(a.scratch_limit) + " B (--max-scratch)";
}

// Bytes of one block (count elements, the part for one peer).
inline std::size_t alltoall_block_bytes(const CollArgs& a) { return a.bytes(); }

// Bytes of `blocks` blocks.
inline std::size_t alltoall_blocks_bytes(const CollArgs& a, int blocks) {
  return static_cast<std::size_t>(blocks) * a.bytes();
}

}  // namespace collscope::detail
