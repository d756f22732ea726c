#include "collscope/verify/data.hpp"

#include "collscope/build_config.hpp"
#include "collscope/device/runtime.hpp"
#include "collscope/reducer.hpp"
#include "device_data.hpp"

namespace collscope::verify {

using namespace values;

std::int64_t input_value(const DataSpec& s, int rank, std::size_t index) {
  return values::input_value(s, rank, index);
}

void fill_input(void* buf, std::size_t count, const DataSpec& s, int rank, std::size_t first) {
  for (std::size_t i = 0; i < count; ++i) store(buf, i, values::input_value(s, rank, first + i), s.dtype);
}

void fill_allreduce_expected(void* buf, std::size_t count, const DataSpec& s,
                             std::size_t first) {
  for (std::size_t i = 0; i < count; ++i) store(buf, i, reduced_value(s, first + i), s.dtype);
  if (s.op == ReduceOp::avg) host_reducer().divide(buf, count, s.dtype, s.nranks);
}

Mismatch compare(const void* got, const void* want, std::size_t count, DataType t) {
  Mismatch m;
  for (std::size_t i = 0; i < count; ++i) {
    if (same_value(got, want, i, t)) continue;
    if (m.wrong++ == 0) {
      m.first_index = static_cast<std::int64_t>(i);
      m.got = load(got, i, t);
      m.want = load(want, i, t);
    }
  }
  return m;
}

namespace {

// Device memory that the host can touch: the host emulation's.
bool host_reachable(MemoryKind mem) {
  return mem == MemoryKind::host || device::runtime().emulated();
}

}  // namespace

void fill_input(MemoryKind mem, void* buf, std::size_t count, const DataSpec& s, int rank,
                std::size_t first) {
  if (host_reachable(mem)) return fill_input(buf, count, s, rank, first);
  gpu::fill_input(buf, count, s, rank, first);
}

void fill_allreduce_expected(MemoryKind mem, void* buf, std::size_t count, const DataSpec& s,
                             std::size_t first) {
  if (host_reachable(mem)) return fill_allreduce_expected(buf, count, s, first);
  gpu::fill_allreduce_expected(buf, count, s, first);
}

Mismatch compare(MemoryKind mem, const void* got, const void* want, std::size_t count,
                 DataType t) {
  if (host_reachable(mem)) return compare(got, want, count, t);
  return gpu::compare(got, want, count, t);
}

}  // namespace collscope::verify
