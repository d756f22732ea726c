#include "collscope/device/stream_work.hpp"

namespace collscope::device {

void StreamScratch::bind(BufferTable& table, std::span<const std::size_t> sizes, CallBuffers buffers) {
  table.set_call(buffers);
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    if (slots_[s].size() < sizes[s]) {
      rt_.synchronize(stream_);  // the old slot may still be read by queued work
      slots_[s] = Buffer(rt_, sizes[s]);
    }
    table.set_scratch(s, slots_[s].get());
  }
}

void enqueue_local(Runtime& rt, Stream stream, const LocalOp& op, std::byte* out, const std::byte* a,
                   const std::byte* b, const CollArgs& args, int nranks) {
  switch (op.kind) {
    case LocalKind::reduce:
      rt.reduce(out, a, b, op.bytes / args.elem_size(), args.dtype, args.op, stream);
      break;
    case LocalKind::copy: rt.copy_kernel(out, a, op.bytes, stream); break;
    case LocalKind::divide: rt.divide(out, op.bytes / args.elem_size(), args.dtype, nranks, stream); break;
  }
}

}  // namespace collscope::device
