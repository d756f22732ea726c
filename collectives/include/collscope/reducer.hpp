// Element-wise reductions and copies, chosen by the memory kind of the buffers.
#pragma once

#include <cstddef>

#include "collscope/types.hpp"

namespace collscope {

class Reducer {
 public:
  virtual ~Reducer() = default;
  // out[i] = a[i] op b[i] for i < count. `out` may alias `a` or `b`.
  // avg reduces like sum; the division happens once at the end (divide()).
  virtual void reduce(void* out, const void* a, const void* b, std::size_t count,
                      DataType t, ReduceOp op) const = 0;
  // buf[i] = buf[i] / divisor, for the avg operator (floating types only).
  virtual void divide(void* buf, std::size_t count, DataType t, int divisor) const = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) const = 0;
};

// The host reducer; the device one arrives with the CUDA back-end. Throws UsageError
// for a memory kind this build cannot reduce on.
const Reducer& reducer_for(MemoryKind mem);
const Reducer& host_reducer();

}  // namespace collscope
