// What the reduce-scatter algorithms share: the scratch check.
#pragma once

#include <optional>
#include <string>

#include "collscope/comm.hpp"

namespace collscope::reduce_scatter_detail {

// `need` bytes of scratch per rank against --max-scratch, refused before anything runs.
inline std::optional<std::string> scratch_check(const char* algorithm, std::size_t need,
                                                const CollArgs& a) {
  if (need <= a.scratch_limit) return std::nullopt;
  return std::string("reduce_scatter/") + algorithm + " needs " + std::to_string(need) +
         " B of scratch per rank, above the limit of " + std::to_string(a.scratch_limit) +
         " B (--max-scratch)";
}

}  // namespace collscope::reduce_scatter_detail
