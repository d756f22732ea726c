// The device's reduce, divide and copy kernels against the host reducer, bit for bit:
// every dtype x op, on the verification data (exact sums) and on data spread over each
// dtype's whole exact range, at odd lengths and at offsets of one element (unaligned for
// the kernels' 16-byte vector loads). A GPU test: without a device it prints why and
// exits 77, which ctest reports as skipped. Under COLLSCOPE_DEVICE_EMULATION=1 it runs on
// the emulated device, which checks this test's own logic, not a GPU.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collscope/device/runtime.hpp"
#include "collscope/errors.hpp"
#include "collscope/reducer.hpp"
#include "collscope/types.hpp"
#include "collscope/verify/values.hpp"

namespace collscope {
namespace {

constexpr int kSkip = 77;
const std::size_t kCounts[] = {1, 3, 17, 1000, 65537, (std::size_t{1} << 20) + 3};

struct Checker {
  device::Runtime& rt;
  device::Stream stream;
  int failures = 0;

  void fail(const std::string& what) {
    if (++failures <= 20) std::printf("FAIL %s\n", what.c_str());
  }

  // Host input of `count` elements of rank `rank`, `offset` elements into the buffer.
  std::vector<std::byte> input(const verify::DataSpec& ds, int rank, std::size_t count,
                               std::size_t offset) {
    const std::size_t e = dtype_size(ds.dtype);
    std::vector<std::byte> v((count + offset) * e);
    for (std::size_t i = 0; i < count; ++i)
      verify::values::store(v.data() + offset * e, i, verify::values::input_value(ds, rank, i),
                            ds.dtype);
    return v;
  }

  // out = a op b (then / 2 for avg) on the device, copied back.
  std::vector<std::byte> on_device(const std::vector<std::byte>& a, const std::vector<std::byte>& b,
                                   std::size_t count, std::size_t offset, DataType t, ReduceOp op) {
    const std::size_t e = dtype_size(t), bytes = a.size();
    device::Buffer da(rt, bytes), db(rt, bytes), dout(rt, bytes);
    rt.copy(da.get(), a.data(), bytes, device::CopyKind::host_to_device, stream);
    rt.copy(db.get(), b.data(), bytes, device::CopyKind::host_to_device, stream);
    rt.memset(dout.get(), 0, bytes, stream);
    auto at = [&](device::Buffer& d) { return static_cast<std::byte*>(d.get()) + offset * e; };
    rt.reduce(at(dout), at(da), at(db), count, t, op, stream);
    if (op == ReduceOp::avg) rt.divide(at(dout), count, t, 2, stream);
    std::vector<std::byte> out(bytes);
    rt.copy(out.data(), dout.get(), bytes, device::CopyKind::device_to_host, stream);
    rt.synchronize(stream);
    return out;
  }

  std::vector<std::byte> on_host(const std::vector<std::byte>& a, const std::vector<std::byte>& b,
                                 std::size_t count, std::size_t offset, DataType t, ReduceOp op) {
    const std::size_t e = dtype_size(t);
    std::vector<std::byte> out(a.size(), std::byte{0});
    const Reducer& r = host_reducer();
    r.reduce(out.data() + offset * e, a.data() + offset * e, b.data() + offset * e, count, t, op);
    if (op == ReduceOp::avg) r.divide(out.data() + offset * e, count, t, 2);
    return out;
  }

  void reduce_case(DataType t, ReduceOp op, bool movement, std::size_t count, std::size_t offset) {
    const verify::DataSpec ds{7 + count, t, op, 2, movement};
    const auto a = input(ds, 0, count, offset), b = input(ds, 1, count, offset);
    const auto want = on_host(a, b, count, offset, t, op);
    const auto got = on_device(a, b, count, offset, t, op);
    if (std::memcmp(want.data(), got.data(), want.size()) != 0)
      fail(std::string(dtype_name(t)) + " " + std::string(op_name(op)) + " count " +
           std::to_string(count) + " offset " + std::to_string(offset) +
           (movement ? " (whole-range data)" : " (verification data)") + ": differs from the host");
  }

  void copy_case(std::size_t bytes, std::size_t src_offset, std::size_t dst_offset) {
    std::vector<std::byte> src(bytes + 16), out(bytes + 16, std::byte{0});
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 131 + 7);
    device::Buffer ds(rt, src.size()), dd(rt, out.size());
    rt.copy(ds.get(), src.data(), src.size(), device::CopyKind::host_to_device, stream);
    rt.memset(dd.get(), 0, out.size(), stream);
    rt.copy_kernel(static_cast<std::byte*>(dd.get()) + dst_offset,
                   static_cast<std::byte*>(ds.get()) + src_offset, bytes, stream);
    rt.copy(out.data(), dd.get(), out.size(), device::CopyKind::device_to_host, stream);
    rt.synchronize(stream);
    std::vector<std::byte> want(bytes + 16, std::byte{0});
    for (std::size_t i = 0; i < bytes; ++i) want.at(dst_offset + i) = src.at(src_offset + i);
    if (want != out)
      fail("copy_kernel " + std::to_string(bytes) + " B from +" + std::to_string(src_offset) +
           " to +" + std::to_string(dst_offset));
  }
};

int run() {
  if (const std::string why = device::unavailable_reason(); !why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return kSkip;
  }
  device::Runtime& rt = device::runtime();
  rt.select(0);
  Checker c{rt, rt.create_stream()};
  int cases = 0;
  for (DataType t : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps) {
      if (!op_valid_for(op, t)) continue;
      for (bool movement : {false, true})
        for (std::size_t count : kCounts)
          for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
            c.reduce_case(t, op, movement, count, offset);
            ++cases;
          }
    }
  for (std::size_t bytes : {std::size_t{1}, std::size_t{15}, std::size_t{4099}, std::size_t{1} << 20})
    for (std::size_t src : {0, 1, 8})
      for (std::size_t dst : {0, 3, 8}) {
        c.copy_case(bytes, src, dst);
        ++cases;
      }
  rt.destroy_stream(c.stream);
  std::printf("%s: %d failure(s) in %d cases on %s\n", c.failures ? "FAILED" : "PASSED",
              c.failures, cases, rt.info().name.c_str());
  return c.failures ? 1 : 0;
}

}  // namespace
}  // namespace collscope

int main() {
  try {
    return collscope::run();
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
