// What the two executors on a GPU stream share (the device executor, device_executor.hpp,
// and the NCCL executor): scratch slots in device memory, and local ops as kernels on the
// stream.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "collscope/device/runtime.hpp"
#include "collscope/executor.hpp"

namespace collscope::device {

// The scratch slots of a schedule in device memory, kept between calls and grown when a
// call needs more.
class StreamScratch {
 public:
  StreamScratch(Runtime& rt, Stream stream) : rt_(rt), stream_(stream), slots_(Plan::kMaxScratch) {}
  // Points `table` at the call's buffers and at slots of at least `sizes` bytes. A slot
  // that grows is replaced once the stream's queued work (which may read it) is done.
  void bind(BufferTable& table, std::span<const std::size_t> sizes, CallBuffers buffers);
  void clear() { slots_.clear(); }

 private:
  Runtime& rt_;
  Stream stream_;
  std::vector<Buffer> slots_;
};

// One local op as a kernel on `stream`, on the resolved addresses: `out`, and the inputs
// `a` and `b` (the caller may point them at a peer's memory). `nranks` divides (average).
void enqueue_local(Runtime& rt, Stream stream, const LocalOp& op, std::byte* out, const std::byte* a,
                   const std::byte* b, const CollArgs& args, int nranks);

}  // namespace collscope::device
