#include "../core/families.hpp"

namespace collscope {

// Filled in as the barrier algorithms land.
std::span<const Algorithm> barrier_algorithms() { return {}; }

}  // namespace collscope
