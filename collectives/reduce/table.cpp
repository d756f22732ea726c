#include "../core/families.hpp"

namespace collscope {

// Filled in as the reduce algorithms land.
std::span<const Algorithm> reduce_algorithms() { return {}; }

}  // namespace collscope
