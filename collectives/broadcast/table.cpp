#include "../core/families.hpp"

namespace collscope {

// Filled in as the broadcast algorithms land.
std::span<const Algorithm> broadcast_algorithms() { return {}; }

}  // namespace collscope
