// Launchers of the device kernels (device_kernels.cu), for the CUDA runtime. The element
// functions are elementwise.hpp's, the same the host reducer runs. Every launcher
// enqueues on `stream` (a cudaStream_t) and returns at once; it returns the launch's
// cudaError_t as an int (0 = success).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/types.hpp"

namespace collscope::device::kernels {

// out[i] = a[i] op b[i]; out may be a or b. avg reduces as sum.
int reduce(void* out, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op,
           void* stream, int multiprocessors);
// buf[i] /= divisor (floating types).
int divide(void* buf, std::size_t count, DataType t, int divisor, void* stream,
           int multiprocessors);
// dst[0, bytes) = src[0, bytes), by a kernel (16-byte words where both are aligned).
int copy(void* dst, const void* src, std::size_t bytes, void* stream, int multiprocessors);

// The flags' kernels (the fallback of stream memory operations): *flag = value once the
// stream's earlier work is visible; the stream waits until *flag == value.
int write_flag(std::uint64_t* flag, std::uint64_t value, void* stream);
int wait_flag(const std::uint64_t* flag, std::uint64_t value, void* stream);

}  // namespace collscope::device::kernels
