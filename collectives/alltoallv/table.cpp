#include "../core/families.hpp"

namespace collscope {

// Filled in as the alltoallv algorithms land.
std::span<const Algorithm> alltoallv_algorithms() { return {}; }

}  // namespace collscope
