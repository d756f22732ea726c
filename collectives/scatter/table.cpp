#include "../core/families.hpp"

namespace collscope {

// Filled in as the scatter algorithms land.
std::span<const Algorithm> scatter_algorithms() { return {}; }

}  // namespace collscope
