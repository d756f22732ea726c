// collscope_reduce_rate: how fast the host reducer reduces (float sum, out = a + b, three
// distinct buffers, as the ring's reduce-scatter does) and copies, per size. One JSON
// line per (kind, size): {"kind": "reduce"|"copy", "bytes": B, "seconds": median of one
// call}. scripts/fit-model fits the model's reduce and copy bands from them.
//
// Sizes: --min-bytes, then times --factor up to --max-bytes (default 1 KiB to 64 MiB,
// factor 2: the model's bands follow the caches, so it needs every size where they
// change). Each size's buffers are touched once before timing, and then reused: the
// reduction of a call runs on data the call has just moved, which is as warm.
// Under mpirun every process measures at the same time (the ranks of a call reduce
// concurrently and share the caches and the memory bus); only the first process prints.
// Usage: collscope_reduce_rate [--min-bytes B] [--max-bytes B] [--factor F] [--seconds S]
// exit 0, or 2 on bad usage
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collscope/reducer.hpp"

namespace {

using collscope::DataType;

struct Options {
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{64} << 20;
  double factor = 2;
  double seconds = 0.2;  // per (kind, size)
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "collscope_reduce_rate: error: %s\n", why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("unknown argument or missing value: " + arg);
    char* end = nullptr;
    const double v = std::strtod(argv[++i], &end);
    if (*end != '\0' || !(v > 0)) usage(arg + " needs a positive number");
    if (arg == "--min-bytes") o.min_bytes = static_cast<std::size_t>(v);
    else if (arg == "--max-bytes") o.max_bytes = static_cast<std::size_t>(v);
    else if (arg == "--factor") o.factor = v;
    else if (arg == "--seconds") o.seconds = v;
    else usage("unknown argument " + arg);
  }
  if (o.min_bytes < sizeof(float) || o.min_bytes > o.max_bytes)
    usage("need 4 <= --min-bytes <= --max-bytes");
  if (!(o.factor > 1)) usage("--factor must be above 1");
  return o;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Median time of one call of `fn`, repeated for about `seconds` (at least 5 times).
template <class Fn>
double median_time(Fn fn, double seconds) {
  std::vector<double> times;
  const double until = now_s() + seconds;
  while (times.size() < 5 || now_s() < until) {
    const double t0 = now_s();
    fn();
    times.push_back(now_s() - t0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void measure(std::size_t bytes, const Options& o, bool print) {
  const std::size_t count = bytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f), out(count, 0.0f);
  const collscope::Reducer& red = collscope::host_reducer();
  const double t_reduce = median_time(
      [&] { red.reduce(out.data(), a.data(), b.data(), count, DataType::float32,
                       collscope::ReduceOp::sum); },
      o.seconds);
  const double t_copy =
      median_time([&] { red.copy(out.data(), a.data(), count * sizeof(float)); }, o.seconds);
  if (!print) return;
  std::printf("{\"kind\": \"reduce\", \"dtype\": \"float\", \"op\": \"sum\", \"bytes\": %zu, "
              "\"seconds\": %.9g}\n", count * sizeof(float), t_reduce);
  std::printf("{\"kind\": \"copy\", \"bytes\": %zu, \"seconds\": %.9g}\n",
              count * sizeof(float), t_copy);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool print = rank == nullptr || std::strcmp(rank, "0") == 0;
  for (double bytes = static_cast<double>(o.min_bytes); bytes <= static_cast<double>(o.max_bytes);
       bytes *= o.factor)
    measure(static_cast<std::size_t>(bytes), o, print);
  return 0;
}
