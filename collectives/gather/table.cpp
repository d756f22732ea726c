#include "../core/families.hpp"

namespace collscope {

// Filled in as the gather algorithms land.
std::span<const Algorithm> gather_algorithms() { return {}; }

}  // namespace collscope
