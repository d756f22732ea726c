// A build without CUDA has no GPU to fill: device memory there is the host emulation's,
// which data.cpp fills on the host, so these are never reached.
#include "collscope/errors.hpp"
#include "device_data.hpp"

namespace collscope::verify::gpu {

void fill_input(void*, std::size_t, const DataSpec&, int, std::size_t) {
  throw UsageError("this build has no CUDA");
}
void fill_allreduce_expected(void*, std::size_t, const DataSpec&, std::size_t) {
  throw UsageError("this build has no CUDA");
}
Mismatch compare(const void*, const void*, std::size_t, DataType) {
  throw UsageError("this build has no CUDA");
}

}  // namespace collscope::verify::gpu
