// Block sizes the all-to-all algorithms share (their scratch is counted in blocks).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "collscope/comm.hpp"

namespace collscope::detail {

// Bytes of one block (count elements, the part for one peer).
inline std::size_t alltoall_block_bytes(const CollArgs& a) { return a.bytes(); }

// Bytes of `blocks` blocks.
inline std::size_t alltoall_blocks_bytes(const CollArgs& a, int blocks) {
  return static_cast<std::size_t>(blocks) * a.bytes();
}

}  // namespace collscope::detail
