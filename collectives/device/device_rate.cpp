// collscope_device_rate: the GPU's own rates, the yardsticks of the device benchmarks:
// the reduce kernel (out = a + b, three distinct buffers: float and bfloat16 sums), the
// copy kernel, and the copy engine's device-to-device copy (cudaMemcpyAsync), per size.
// One JSON line per (kind, dtype, size): {"kind": "reduce"|"copy_kernel"|"memcpy_d2d",
// "dtype", "bytes", "seconds" (median of one call), "gbps" (bytes moved / second: a
// reduction reads 2 B and writes B, a copy reads B and writes B; the figure counts B)}.
// The reduce kernel should reach >= 90% of memcpy_d2d's rate at the same size.
//
// Usage: collscope_device_rate [--min-bytes SIZE] [--max-bytes SIZE] [--factor F] [--reps N]
// (default 64 MiB to 1 GiB, factor 2, 20 timed calls per size after 3 untimed).
// Exit 0; 2 on bad usage or without a usable GPU (one line: why).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collscope/device/runtime.hpp"
#include "collscope/errors.hpp"

namespace collscope {
namespace {

struct Options {
  std::size_t min_bytes = std::size_t{64} << 20;
  std::size_t max_bytes = std::size_t{1} << 30;
  std::size_t factor = 2;
  int reps = 20;
};

// A positive count, with an optional K, M or G (x1024) as the benchmarks take sizes.
std::size_t number(const char* text, const char* flag) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  const std::string suffix = end ? end : "";
  const int shift = suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : suffix.empty() ? 0 : -1;
  if (end == text || shift < 0 || v == 0 || v > (~0ULL >> shift))
    throw UsageError(std::string("bad ") + flag + " '" + text + "' (expected e.g. 65536, 64K, 64M, 1G)");
  return static_cast<std::size_t>(v << shift);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw UsageError("unknown argument or missing value: " + a);
    const char* v = argv[++i];
    if (a == "--min-bytes") o.min_bytes = number(v, "--min-bytes");
    else if (a == "--max-bytes") o.max_bytes = number(v, "--max-bytes");
    else if (a == "--factor") o.factor = number(v, "--factor");
    else if (a == "--reps") o.reps = static_cast<int>(number(v, "--reps"));
    else throw UsageError("unknown argument: " + a);
  }
  if (o.min_bytes > o.max_bytes) throw UsageError("--min-bytes is larger than --max-bytes");
  if (o.factor < 2) throw UsageError("--factor must be at least 2");
  return o;
}

// Median seconds of one call of `op` (a stream's work), synchronized around each.
template <typename Op>
double median_seconds(device::Runtime& rt, device::Stream s, int reps, Op op) {
  for (int i = 0; i < 3; ++i) op();
  rt.synchronize(s);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    op();
    rt.synchronize(s);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

void print(const char* kind, const char* dtype, std::size_t bytes, double seconds) {
  std::printf("{\"kind\": \"%s\", \"dtype\": \"%s\", \"bytes\": %zu, \"seconds\": %.9g, \"gbps\": %.3f}\n",
              kind, dtype, bytes, seconds, static_cast<double>(bytes) / seconds / 1e9);
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  device::Runtime& rt = device::runtime();
  rt.select(0);
  device::Stream s = rt.create_stream();
  for (std::size_t bytes = o.min_bytes;; bytes = std::min(bytes * o.factor, o.max_bytes)) {
    device::Buffer a(rt, bytes), b(rt, bytes), out(rt, bytes);
    rt.memset(a.get(), 0, bytes, s);
    rt.memset(b.get(), 0, bytes, s);
    print("memcpy_d2d", "", bytes, median_seconds(rt, s, o.reps, [&] {
            rt.copy(out.get(), a.get(), bytes, device::CopyKind::device_to_device, s);
          }));
    print("copy_kernel", "", bytes, median_seconds(rt, s, o.reps, [&] {
            rt.copy_kernel(out.get(), a.get(), bytes, s);
          }));
    for (DataType t : {DataType::float32, DataType::bfloat16})
      print("reduce", std::string(dtype_name(t)).c_str(), bytes, median_seconds(rt, s, o.reps, [&] {
              rt.reduce(out.get(), a.get(), b.get(), bytes / dtype_size(t), t, ReduceOp::sum, s);
            }));
    if (bytes == o.max_bytes) break;
  }
  rt.destroy_stream(s);
  return 0;
}

}  // namespace
}  // namespace collscope

int main(int argc, char** argv) {
  try {
    return collscope::run(argc, argv);
  } catch (const collscope::UsageError& e) {
    std::fprintf(stderr, "collscope_device_rate: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collscope_device_rate: error: %s\n", e.what());
    return 3;
  }
}
