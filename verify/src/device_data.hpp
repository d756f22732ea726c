// The test data in GPU memory (device_data.cu): the kernels behind data.hpp's
// MemoryKind overloads. Each runs on the default stream and returns when it is done
// (filling and checking are never timed). Without CUDA in the build they throw.
#pragma once

#include "collscope/verify/data.hpp"

namespace collscope::verify::gpu {

void fill_input(void* buf, std::size_t count, const DataSpec& s, int rank, std::size_t first);
void fill_allreduce_expected(void* buf, std::size_t count, const DataSpec& s, std::size_t first);
Mismatch compare(const void* got, const void* want, std::size_t count, DataType t);

}  // namespace collscope::verify::gpu
