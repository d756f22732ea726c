// The --max-scratch check every algorithm that allocates scratch makes in its
// constraint: refused before any message is sent, with the same one-line message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "collscope/comm.hpp"

namespace collscope {

// nullopt when `need` bytes per rank fit under a.scratch_limit, else why not.
inline std::optional<std::string> scratch_constraint(std::string_view collective,
                                                     std::string_view algorithm,
                                                     std::size_t need, int nranks,
                                                     const CollArgs& a) {
  if (need <= a.scratch_limit) return std::nullopt;
  return std::string(collective) + "/" + std::string(algorithm) + " needs " +
         std::to_string(need) + " B of scratch per rank at " + std::to_string(nranks) +
         " ranks, above the limit of " + std::to_string(a.scratch_limit) + " B (--max-scratch)";
}

}  // namespace collscope
