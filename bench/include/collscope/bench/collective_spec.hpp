// What the harness must know of each collective, in the spirit of nccl-tests' per-
// collective table: buffer sizes for a size column, data, expected result, bus factor.
#pragma once

#include <cstddef>
#include <string_view>

#include "collscope/verify/data.hpp"

namespace collscope::bench {

struct CollectiveSpec {
  std::string_view name;
  bool reduces = false;  // takes -o
  bool rooted = false;   // takes -r
  // Elements in this rank's send and receive buffers for a call of `count` elements.
  std::size_t (*send_count)(std::size_t count, int nranks) = nullptr;
  std::size_t (*recv_count)(std::size_t count, int nranks) = nullptr;
  // This rank's input, and what its receive buffer must hold afterwards.
  void (*fill_input)(void* buf, std::size_t count, const verify::DataSpec&, int rank) = nullptr;
  void (*fill_expected)(void* buf, std::size_t count, const verify::DataSpec&, int rank,
                        int root) = nullptr;
};

// nullptr for a collective the harness does not know.
const CollectiveSpec* find_collective_spec(std::string_view name);

}  // namespace collscope::bench
