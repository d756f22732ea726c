// The host reducer: element-wise reductions on CPU memory.
//
// One function template per (element type, operator) holds a plain indexed loop that
// the compiler vectorises; switches pick the instance. `out` may be the same buffer as
// `a` or `b` (in-place reduction): every iteration reads index i before writing index
// i, so the loop is correct then, and the pointers are deliberately not __restrict.
// Partially overlapping buffers (out = a + k, k != 0) are not supported.
//
// The element functions (wrapping integers, 16-bit floats computed in float, NaN in
// max/min) are elementwise.hpp's, shared with the device kernels.

#include <cstring>
#include <type_traits>

#include "collscope/build_config.hpp"
#include "collscope/errors.hpp"
#include "collscope/elementwise.hpp"
#include "collscope/reducer.hpp"

namespace collscope {
namespace {

using namespace elementwise;

template <class T, class Op>
void reduce_loop(T* out, const T* a, const T* b, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = reduce_one<T, Op>(a[i], b[i]);
}

template <class T>
void reduce_typed(void* out, const void* a, const void* b, std::size_t count, ReduceOp op) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return reduce_loop<T, Sum>(o, x, y, count);
    case ReduceOp::prod: return reduce_loop<T, Prod>(o, x, y, count);
    case ReduceOp::max: return reduce_loop<T, Max>(o, x, y, count);
    case ReduceOp::min: return reduce_loop<T, Min>(o, x, y, count);
  }
  throw UsageError("unknown reduction operator");
}

template <class T>
void divide_typed(void* buf, std::size_t count, int divisor) {
  auto* p = static_cast<T*>(buf);
  for (std::size_t i = 0; i < count; ++i) p[i] = divide_one(p[i], divisor);
}

class HostReducer final : public Reducer {
 public:
  void reduce(void* out, const void* a, const void* b, std::size_t count, DataType t,
              ReduceOp op) const override {
    switch (t) {
      case DataType::int8: return reduce_typed<std::int8_t>(out, a, b, count, op);
      case DataType::uint8: return reduce_typed<std::uint8_t>(out, a, b, count, op);
      case DataType::int32: return reduce_typed<std::int32_t>(out, a, b, count, op);
      case DataType::int64: return reduce_typed<std::int64_t>(out, a, b, count, op);
      case DataType::float16: return reduce_typed<float16_t>(out, a, b, count, op);
      case DataType::bfloat16: return reduce_typed<bfloat16_t>(out, a, b, count, op);
      case DataType::float32: return reduce_typed<float>(out, a, b, count, op);
      case DataType::float64: return reduce_typed<double>(out, a, b, count, op);
    }
    throw UsageError("unknown data type");
  }

  void divide(void* buf, std::size_t count, DataType t, int divisor) const override {
    switch (t) {
      case DataType::float16: return divide_typed<float16_t>(buf, count, divisor);
      case DataType::bfloat16: return divide_typed<bfloat16_t>(buf, count, divisor);
      case DataType::float32: return divide_typed<float>(buf, count, divisor);
      case DataType::float64: return divide_typed<double>(buf, count, divisor);
      case DataType::int8:
      case DataType::uint8:
      case DataType::int32:
      case DataType::int64: break;
    }
    throw UsageError("avg is only defined for floating types");
  }

  void copy(void* dst, const void* src, std::size_t bytes) const override {
    if (bytes == 0 || dst == src) return;
    std::memcpy(dst, src, bytes);
  }
};

}  // namespace

const Reducer& host_reducer() {
  static const HostReducer reducer;
  return reducer;
}

const Reducer& reducer_for(MemoryKind mem) {
  if (mem == MemoryKind::host) return host_reducer();
#if COLLSCOPE_HAVE_CUDA
  throw UsageError("device reductions are not implemented yet");
#else
  throw UsageError("device memory needs a CUDA build of collscope; this build has none");
#endif
}

}  // namespace collscope
