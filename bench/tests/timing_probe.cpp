// A bare MPI_Allreduce (float, sum), timed the way each benchmark tool times it, with
// the buffers placed the way each tool places them. A test program for explaining the
// differences between the tools' figures (docs/timing.md), not part of the product:
// it is built beside the tests, not into bin/.
//
//   mpirun -np 2 timing_probe --method imb|osu|loop|loop-sync [--ranks max|avg|min]
//          [--buffers page|alloc-mem|aligned64|fresh] [--offset BYTES] [-n ITERS]
//          [-w WARMUP] [--warmup-first] [--calls] [--funneled] SIZE...
//
// Methods (one line per size: bytes, then the combined time per call in us):
//   imb        -w calls timed alike and dropped, two barriers; per call: the call alone
//              timed, then a barrier; per-rank mean
//   osu        a barrier; per call: the call alone timed, then a barrier; the first -w
//              calls of every size untimed
//   loop       a barrier, then -n calls back to back under one timer, / -n; before it,
//              -w calls each after a barrier (collscope's --timing loop)
//   loop-sync  as loop, with a barrier after every call inside the timer
// --warmup-first: the -w calls before the first size only.
// Buffers: page (posix_memalign to the page, once for the largest size: OSU), alloc-mem
// (MPI_Alloc_mem once for the largest size: IMB), aligned64 (aligned_alloc(64) once),
// fresh (a page, anew for every size, touched by the first call: collscope).
// --offset shifts both buffers by that many bytes from where they were placed.
// --funneled: MPI_Init_thread(MPI_THREAD_FUNNELED) instead of MPI_Init (single), as
// collscope asks when it runs other threads (a watchdog, GPU libraries).
// --calls (imb, osu): rank 0's calls of each size besides: their median, the largest, and
// how many took over 10 times the median (the calls a mean over them cannot shed).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum class Method { imb, osu, loop, loop_sync };
enum class Combine { max, avg, min };
enum class Placement { page, alloc_mem, aligned64, fresh };

struct Setup {
  Method method = Method::loop;
  Combine combine = Combine::avg;
  Placement placement = Placement::page;
  std::size_t offset = 0;
  int iters = 200;
  int warmup = 20;
  bool warmup_first = false;
  bool calls = false;
  std::vector<std::size_t> sizes;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "timing_probe: %s\n", why.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

template <typename E>
E pick(const std::string& text, std::initializer_list<std::pair<const char*, E>> names,
       const char* flag) {
  for (const auto& [name, value] : names)
    if (text == name) return value;
  usage(std::string("bad ") + flag + " '" + text + "'");
}

Setup parse(int argc, char** argv) {
  Setup s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--method" && has_value)
      s.method = pick<Method>(argv[++i], {{"imb", Method::imb}, {"osu", Method::osu},
                                          {"loop", Method::loop}, {"loop-sync", Method::loop_sync}},
                              "--method");
    else if (a == "--ranks" && has_value)
      s.combine = pick<Combine>(argv[++i], {{"max", Combine::max}, {"avg", Combine::avg},
                                            {"min", Combine::min}},
                                "--ranks");
    else if (a == "--buffers" && has_value)
      s.placement = pick<Placement>(argv[++i], {{"page", Placement::page},
                                                {"alloc-mem", Placement::alloc_mem},
                                                {"aligned64", Placement::aligned64},
                                                {"fresh", Placement::fresh}},
                                    "--buffers");
    else if (a == "--offset" && has_value) s.offset = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "-n" && has_value) s.iters = std::atoi(argv[++i]);
    else if (a == "-w" && has_value) s.warmup = std::atoi(argv[++i]);
    else if (a == "--calls") s.calls = true;
    else if (a == "--warmup-first") s.warmup_first = true;
    else if (a == "--funneled") continue;  // read before MPI_Init_thread
    else if (!a.empty() && a[0] != '-') s.sizes.push_back(std::strtoull(a.c_str(), nullptr, 10));
    else usage("unknown argument '" + a + "'");
  }
  if (s.sizes.empty() || s.iters < 1 || s.warmup < 0) usage("need sizes, -n >= 1, -w >= 0");
  return s;
}

// The send and receive buffers of one size, placed as the setup says.
class Buffers {
 public:
  explicit Buffers(const Setup& s) : s_(s) {
    std::size_t largest = 0;
    for (std::size_t b : s.sizes) largest = std::max(largest, b);
    if (s.placement != Placement::fresh) place(largest);
  }
  ~Buffers() { release(); }
  void for_size(std::size_t bytes) {
    if (s_.placement == Placement::fresh) {
      release();
      place(bytes);
    }
  }
  float* send() const { return reinterpret_cast<float*>(send_ + s_.offset); }
  float* recv() const { return reinterpret_cast<float*>(recv_ + s_.offset); }

 private:
  void place(std::size_t bytes) {
    const std::size_t total = bytes + s_.offset + 64;
    send_ = allocate(total);
    recv_ = allocate(total);
    std::memset(send_, 1, total);
    if (s_.placement != Placement::fresh) std::memset(recv_, 0, total);
  }
  char* allocate(std::size_t total) const {
    void* p = nullptr;
    switch (s_.placement) {
      case Placement::page:
        if (posix_memalign(&p, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), total) != 0) p = nullptr;
        break;
      case Placement::alloc_mem:
        MPI_Alloc_mem(static_cast<MPI_Aint>(total), MPI_INFO_NULL, &p);
        break;
      case Placement::aligned64:
        p = std::aligned_alloc(64, (total + 63) / 64 * 64);
        break;
      case Placement::fresh:
        p = std::aligned_alloc(4096, (total + 4095) / 4096 * 4096);
        break;
    }
    if (!p) usage("out of memory");
    return static_cast<char*>(p);
  }
  void release() {
    for (char* p : {send_, recv_}) {
      if (!p) continue;
      if (s_.placement == Placement::alloc_mem) MPI_Free_mem(p);
      else std::free(p);
    }
    send_ = recv_ = nullptr;
  }
  const Setup& s_;
  char* send_ = nullptr;
  char* recv_ = nullptr;
};

void allreduce(const Buffers& b, std::size_t bytes) {
  MPI_Allreduce(b.send(), b.recv(), static_cast<int>(bytes / sizeof(float)), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
}

// Each call timed alone, a barrier after it (IMB and OSU): the mean over `iters`, each
// call's time in `each` when given.
double separated_calls(const Buffers& b, std::size_t bytes, int iters,
                       std::vector<double>* each = nullptr) {
  double t = 0;
  for (int i = 0; i < iters; ++i) {
    const double t0 = MPI_Wtime();
    allreduce(b, bytes);
    const double t1 = MPI_Wtime();
    t += t1 - t0;
    if (each) each->push_back(t1 - t0);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return t / iters;
}

// The median, the largest and the count of calls above 10 times the median, in us.
std::string describe_calls(std::vector<double> each) {
  if (each.empty()) return "";
  std::sort(each.begin(), each.end());
  const double median = each[each.size() / 2];
  const auto slow = std::count_if(each.begin(), each.end(), [&](double t) { return t > 10 * median; });
  char text[128];
  std::snprintf(text, sizeof text, "  median %.4f  max %.1f  over 10x median: %ld", median * 1e6,
                each.back() * 1e6, static_cast<long>(slow));
  return text;
}

// `iters` calls under one timer, with or without a barrier after each.
double one_timer(const Buffers& b, std::size_t bytes, int iters, bool sync) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    allreduce(b, bytes);
    if (sync) MPI_Barrier(MPI_COMM_WORLD);
  }
  return (MPI_Wtime() - t0) / iters;
}

double time_size(const Setup& s, const Buffers& b, std::size_t bytes, bool first,
                 std::vector<double>* each) {
  const int warmup = s.warmup_first && !first ? 0 : s.warmup;
  switch (s.method) {
    case Method::imb:
      separated_calls(b, bytes, warmup);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      return separated_calls(b, bytes, s.iters, each);
    case Method::osu: {
      MPI_Barrier(MPI_COMM_WORLD);
      separated_calls(b, bytes, warmup);
      return separated_calls(b, bytes, s.iters, each);
    }
    case Method::loop:
    case Method::loop_sync:
      for (int i = 0; i < warmup; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        allreduce(b, bytes);
      }
      return one_timer(b, bytes, s.iters, s.method == Method::loop_sync);
  }
  return 0;
}

double combine(double mine, Combine c, int nranks) {
  double out = 0;
  const MPI_Op op = c == Combine::max ? MPI_MAX : c == Combine::min ? MPI_MIN : MPI_SUM;
  MPI_Reduce(&mine, &out, 1, MPI_DOUBLE, op, 0, MPI_COMM_WORLD);
  return c == Combine::avg ? out / nranks : out;
}

bool asks_funneled(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--funneled") return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, asks_funneled(argc, argv) ? MPI_THREAD_FUNNELED : MPI_THREAD_SINGLE,
                  &provided);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const Setup s = parse(argc, argv);
  {
    Buffers buffers(s);
    bool first = true;
    for (std::size_t bytes : s.sizes) {
      buffers.for_size(bytes);
      if (s.placement == Placement::fresh) allreduce(buffers, bytes);  // the probe call
      std::vector<double> each;
      const double mine = time_size(s, buffers, bytes, first, s.calls ? &each : nullptr);
      const double us = combine(mine, s.combine, nranks) * 1e6;
      if (rank == 0) std::printf("%zu %.4f%s\n", bytes, us, describe_calls(each).c_str());
      first = false;
    }
  }
  MPI_Finalize();
  return 0;
}
