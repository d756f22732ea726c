// collscope_predict: the time model at scales this machine cannot run. Computes every
// rank's trace of one call of a hand-written algorithm from its schedule (no MPI, no
// buffers), replays them in the simulator against a model file, and prints per (N, size)
// the predicted time, algbw and busbw (nccl-tests' factors), and the traces' per-rank
// volume against the closed-form theory at every rank (MODEL.md, "Prediction at scale").
//
// Usage: collscope_predict ALGORITHM --model FILE -N 16,64,... [--ranks-per-node R]
//          [-b SIZE] [-e SIZE] [-f FACTOR] [-d DTYPE] [--in-place] [--segment SIZE]
//          [--format table|jsonl|exact] [--threads 1|2]
// exit 0; 1 when a trace's volume differs from the theory at some rank (a bug: printed
// as MISMATCH, never hidden); 2 on bad usage or a bad model file; 3 when a simulation
// fails (traces that cannot complete).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/errors.hpp"
#include "collscope/model.hpp"
#include "collscope/schedule_trace.hpp"
#include "collscope/size_text.hpp"
#include "collscope/verify/splits.hpp"

namespace {

using namespace collscope;

constexpr int kMaxRanks = 1 << 16;

struct Options {
  std::string algorithm;
  std::string model_path;
  std::vector<int> nranks;
  int ranks_per_node = 1;
  std::size_t min_bytes = std::size_t{1} << 20;
  std::size_t max_bytes = std::size_t{1} << 20;
  double factor = 2;
  DataType dtype = DataType::float32;
  bool in_place = false;
  std::size_t segment_bytes = kDefaultSegmentBytes;
  enum class Format { table, jsonl, exact } format = Format::table;
  int threads = std::thread::hardware_concurrency() >= 2 ? 2 : 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "collscope_predict: error: %s\n", why.c_str());
  std::exit(2);
}

// The sizes of every binary (collscope/size_text.hpp): "4096", "64K", "1M", "1G", ...
std::size_t parse_size(const std::string& flag, const std::string& text) {
  const auto bytes = parse_size_text(text);
  if (const auto* v = std::get_if<std::uint64_t>(&bytes)) return static_cast<std::size_t>(*v);
  switch (std::get<SizeRefusal>(bytes)) {
    case SizeRefusal::signed_: usage(flag + " needs a non-negative size, got '" + text + "'");
    case SizeRefusal::too_large: usage(flag + " is too large: '" + text + "'");
    case SizeRefusal::malformed: break;
  }
  if (text.empty()) usage(flag + " needs a size, got ''");
  usage(flag + " needs a size like 1024, 64K, 1M or 1G, got '" + text + "'");
}

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  std::size_t pos = 0;
  long v = 0;
  try {
    v = std::stol(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size() || v < lo || v > hi)
    usage(flag + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
          "], got '" + text + "'");
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  bool have_b = false, have_e = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model" || arg == "-m") o.model_path = value();
    else if (arg == "-N" || arg == "--nranks") {
      const std::string list = value();
      std::size_t start = 0;
      while (true) {
        const std::size_t comma = list.find(',', start);
        o.nranks.push_back(parse_int("-N", list.substr(start, comma - start), 1, kMaxRanks));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (arg == "--ranks-per-node") o.ranks_per_node = parse_int(arg, value(), 1, kMaxRanks);
    else if (arg == "-b" || arg == "--minbytes") { o.min_bytes = parse_size(arg, value()); have_b = true; }
    else if (arg == "-e" || arg == "--maxbytes") { o.max_bytes = parse_size(arg, value()); have_e = true; }
    else if (arg == "-f" || arg == "--stepfactor") {
      const std::string v = value();
      char* end = nullptr;
      o.factor = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.factor > 1) || !std::isfinite(o.factor))
        usage("-f needs a number above 1, got '" + v + "'");
    } else if (arg == "-d" || arg == "--dtype") {
      const std::string v = value();
      const auto t = parse_dtype(v);
      if (!t) usage("unknown dtype '" + v + "'");
      o.dtype = *t;
    } else if (arg == "--segment") {
      o.segment_bytes = parse_size(arg, value());
      if (o.segment_bytes == 0) usage("--segment must be positive");
    } else if (arg == "--in-place") o.in_place = true;
    else if (arg == "--threads") o.threads = parse_int(arg, value(), 1, 2);
    else if (arg == "--format") {
      const std::string v = value();
      if (v == "jsonl") o.format = Options::Format::jsonl;
      else if (v == "exact") o.format = Options::Format::exact;
      else if (v != "table") usage("--format is table, jsonl or exact, got '" + v + "'");
    } else if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: collscope_predict ALGORITHM --model FILE -N 16,64,... [--ranks-per-node R]\n"
          "         [-b SIZE] [-e SIZE] [-f FACTOR] [-d DTYPE] [--in-place] [--segment SIZE]\n"
          "         [--format table|jsonl|exact] [--threads 1|2]\n");
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-') usage("unknown argument " + arg);
    else positional.push_back(arg);
  }
  if (positional.size() != 1) usage("name one algorithm, like allreduce_ring");
  o.algorithm = positional[0];
  if (o.model_path.empty()) usage("--model FILE is required");
  if (o.nranks.empty()) usage("-N is required (a comma-separated list of rank counts)");
  if (have_b && !have_e) o.max_bytes = o.min_bytes;
  if (have_e && !have_b) o.min_bytes = o.max_bytes;
  if (o.min_bytes > o.max_bytes) usage("-b must not exceed -e");
  return o;
}

const Algorithm& find(const std::string& full) {
  for (const Algorithm& a : all_algorithms())
    if (a.full_name() == full) {
      if (a.is_vendor() || a.schedule == nullptr)
        usage("'" + full + "' is a vendor's collective: it has no schedule to predict");
      return a;
    }
  usage("unknown algorithm '" + full + "' (like allreduce_ring; see the README's list)");
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Row {
  int nranks = 0;
  std::size_t bytes = 0;  // the size column (reported bytes)
  std::size_t count = 0;
  double time_us = 0;
  double algbw = 0, busbw = 0;  // GB/s
  std::uint64_t max_sent = 0, theory_max_sent = 0;
  bool volume_ok = true;
  std::string mismatch;  // the first rank that differs
  std::size_t events = 0;
  double trace_s = 0, sim_s = 0, rss_mib = 0;
};

// Sets rank r's traced volume against the closed-form theory; the row keeps the first
// rank that differs.
void check_volume(Row& row, const Algorithm& algo, int r, int n, const CollArgs& a,
                  const RankVolume& got) {
  const RankVolume want = theory_total(algo.theory, r, n, a);
  row.max_sent = std::max<std::uint64_t>(row.max_sent, got.sent_bytes);
  row.theory_max_sent = std::max<std::uint64_t>(row.theory_max_sent, want.sent_bytes);
  if (!row.volume_ok || got == want) return;
  row.volume_ok = false;
  row.mismatch = "rank " + std::to_string(r) + ": traces sent " + std::to_string(got.sent_bytes) +
                 " B in " + std::to_string(got.sent_msgs) + " messages, received " +
                 std::to_string(got.recv_bytes) + " B in " + std::to_string(got.recv_msgs) +
                 "; theory " + std::to_string(want.sent_bytes) + " B in " +
                 std::to_string(want.sent_msgs) + ", " + std::to_string(want.recv_bytes) +
                 " B in " + std::to_string(want.recv_msgs);
}

// A rank's events as the simulator reads them, counted on the way (by whichever thread
// computes them: one at a time, and before the simulation ends).
class CountedSource final : public EventSource {
 public:
  explicit CountedSource(std::unique_ptr<EventSource> inner) : inner_(std::move(inner)) {}
  bool fill(std::vector<TraceEvent>& out) override {
    const std::size_t before = out.size();
    const bool more = inner_->fill(out);
    for (std::size_t i = before; i < out.size(); ++i) totals.add(out[i]);
    return more;
  }
  TraceTotals totals;

 private:
  std::unique_ptr<EventSource> inner_;
};

// The trace the simulator read must move what the first pass counted (and set against
// the theory) for the rank: else the row is a MISMATCH too.
void check_simulated(Row& row, int r, const TraceTotals& counted, const TraceTotals& simulated) {
  if (simulated == counted) return;
  row.volume_ok = false;
  row.mismatch = "rank " + std::to_string(r) + ": the simulated trace sent " +
                 std::to_string(simulated.sent_bytes) + " B in " +
                 std::to_string(simulated.sent_msgs) + " messages in " +
                 std::to_string(simulated.events) + " events; its schedule " +
                 std::to_string(counted.sent_bytes) + " B in " + std::to_string(counted.sent_msgs) +
                 " messages in " + std::to_string(counted.events) + " events";
}

// Every rank's totals (schedule_totals): ranks do not depend on each other, so with two
// threads each takes every other rank.
std::vector<TraceTotals> totals_of_ranks(const Algorithm& algo, int n, const CollArgs& a,
                                         bool in_place, int threads) {
  std::vector<TraceTotals> totals(static_cast<std::size_t>(n));
  auto count = [&](int first, int stride) {
    for (int r = first; r < n; r += stride)
      totals[static_cast<std::size_t>(r)] = schedule_totals(algo, r, n, a, in_place);
  };
  if (threads < 2 || n < 2) {
    count(0, 1);
    return totals;
  }
  std::exception_ptr failed;
  std::thread helper;
  try {
    helper = std::thread([&] {
      try {
        count(1, 2);
      } catch (...) {
        failed = std::current_exception();
      }
    });
  } catch (const std::system_error&) {  // no second thread to be had
    count(0, 1);
    return totals;
  }
  try {
    count(0, 2);
  } catch (...) {
    helper.join();
    throw;
  }
  helper.join();
  if (failed) std::rethrow_exception(failed);
  return totals;
}

Row predict_one(const Algorithm& algo, const Options& o, const Model& model, int n,
                std::size_t size) {
  const CollectiveInfo& info = algo.info();
  Row row;
  row.nranks = n;
  CollArgs a;
  a.dtype = o.dtype;
  a.segment_bytes = o.segment_bytes;
  a.scratch_limit = std::numeric_limits<std::size_t>::max();  // nothing is allocated
  const std::size_t elem = dtype_size(o.dtype);
  std::vector<std::uint64_t> splits;
  if (info.has_data) {
    a.count = info.count_for_bytes(size, elem, n);
    if (algo.collective == Collective::alltoallv) {
      splits = verify::make_splits(verify::SplitPattern::uniform, size / elem,
                                   n, 1);
      a.splits = splits;
    }
  }
  const bool in_place = o.in_place;
  if (const auto problem = call_problem(algo, n, a, in_place))
    throw UsageError(algo.full_name() + " at N = " + std::to_string(n) + ": " + *problem);
  row.count = a.count;
  row.bytes = info.has_data ? info.reported_bytes(a, n) : 0;

  // First pass: what each rank's trace moves (its footprint, and the volume against the
  // theory). Second pass: the simulation, reading every rank's trace step by step, so no
  // whole trace is ever held.
  double t0 = now_s();
  const std::vector<TraceTotals> totals = totals_of_ranks(algo, n, a, in_place, o.threads);
  std::vector<RankStream> ranks(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const TraceTotals& t = totals[static_cast<std::size_t>(r)];
    ranks[static_cast<std::size_t>(r)].footprint = t.footprint();
    row.events += t.events;
    check_volume(row, algo, r, n, a, RankVolume{t.sent_bytes, t.sent_msgs, t.recv_bytes, t.recv_msgs});
  }
  row.trace_s = now_s() - t0;
  std::vector<std::unique_ptr<CountedSource>> sources;
  for (int r = 0; r < n; ++r) {
    sources.push_back(std::make_unique<CountedSource>(schedule_source(algo, r, n, a, in_place)));
    ranks[static_cast<std::size_t>(r)].events = sources.back().get();
  }
  std::vector<int> nodes(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) nodes[static_cast<std::size_t>(r)] = r / o.ranks_per_node;
  t0 = now_s();
  row.time_us = predict_us(ranks, nodes, model, o.threads);
  row.sim_s = now_s() - t0;
  for (int r = 0; r < n && row.volume_ok; ++r)
    check_simulated(row, r, totals[static_cast<std::size_t>(r)],
                    sources[static_cast<std::size_t>(r)]->totals);
  row.rss_mib = peak_rss_mib();
  if (row.time_us > 0 && row.bytes > 0) {
    row.algbw = static_cast<double>(row.bytes) / (row.time_us * 1e-6) / 1e9;
    row.busbw = row.algbw * busbw_factor(info, n);
  }
  return row;
}

void print_header(const Options& o) {
  if (o.format != Options::Format::table) return;
  std::printf("# %s, model %s, %d rank(s) per node, dtype %s%s\n", o.algorithm.c_str(),
              o.model_path.c_str(), o.ranks_per_node, std::string(dtype_name(o.dtype)).c_str(),
              o.in_place ? ", in place" : "");
  std::printf("%6s %12s %12s %14s %10s %10s %16s %16s %8s %10s %8s %8s %9s %9s\n", "N", "size",
              "count", "time_us", "algbw", "busbw", "max_sent_B", "theory_sent_B", "volume",
              "events", "trace_s", "sim_s", "Mevents/s", "rss_MiB");
}

// Events simulated per second of the simulation (0 when it took no measurable time).
double events_per_s(const Row& r) {
  return r.sim_s > 0 ? static_cast<double>(r.events) / r.sim_s : 0;
}

// Every predicted figure to the last bit (the doubles as hexadecimal floats) and nothing
// that measures this run (no times, no memory): two builds that predict alike print
// the same bytes.
void print_exact(const Options& o, const Row& r) {
  std::printf("%s N %d rpn %d %s%s size %zu count %zu time_us %a algbw %a busbw %a "
              "max_sent %llu theory_sent %llu volume %s events %zu\n",
              o.algorithm.c_str(), r.nranks, o.ranks_per_node,
              std::string(dtype_name(o.dtype)).c_str(), o.in_place ? " in_place" : "", r.bytes,
              r.count, r.time_us, r.algbw, r.busbw, static_cast<unsigned long long>(r.max_sent),
              static_cast<unsigned long long>(r.theory_max_sent), r.volume_ok ? "ok" : "MISMATCH",
              r.events);
}

void print_row(const Options& o, const Row& r) {
  if (o.format == Options::Format::exact) {
    print_exact(o, r);
  } else if (o.format == Options::Format::jsonl) {
    std::printf("{\"algorithm\": \"%s\", \"nranks\": %d, \"ranks_per_node\": %d, "
                "\"dtype\": \"%s\", \"in_place\": %s, \"size\": %zu, \"count\": %zu, "
                "\"time_us\": %.6g, \"algbw\": %.6g, \"busbw\": %.6g, \"max_sent_bytes\": %llu, "
                "\"theory_max_sent_bytes\": %llu, \"volume_ok\": %s, \"events\": %zu, "
                "\"trace_s\": %.3f, \"sim_s\": %.3f, \"events_per_s\": %.4g, \"peak_rss_mib\": %.1f}\n",
                o.algorithm.c_str(), r.nranks, o.ranks_per_node,
                std::string(dtype_name(o.dtype)).c_str(), o.in_place ? "true" : "false",
                r.bytes, r.count, r.time_us, r.algbw, r.busbw,
                static_cast<unsigned long long>(r.max_sent),
                static_cast<unsigned long long>(r.theory_max_sent),
                r.volume_ok ? "true" : "false", r.events, r.trace_s, r.sim_s, events_per_s(r),
                r.rss_mib);
  } else {
    std::printf("%6d %12zu %12zu %14.2f %10.3f %10.3f %16llu %16llu %8s %10zu %8.2f %8.2f %9.2f %9.1f\n",
                r.nranks, r.bytes, r.count, r.time_us, r.algbw, r.busbw,
                static_cast<unsigned long long>(r.max_sent),
                static_cast<unsigned long long>(r.theory_max_sent),
                r.volume_ok ? "ok" : "MISMATCH", r.events, r.trace_s, r.sim_s,
                events_per_s(r) / 1e6, r.rss_mib);
  }
  if (!r.volume_ok)
    std::fprintf(stderr, "collscope_predict: volume MISMATCH at N = %d, size %zu: %s\n",
                 r.nranks, r.bytes, r.mismatch.c_str());
  std::fflush(stdout);
}

int run(const Options& o) {
  const Algorithm& algo = find(o.algorithm);
  const Model model = load_model(o.model_path);
  std::vector<std::size_t> sizes;
  if (!algo.info().has_data) {
    sizes.push_back(0);
  } else {
    for (double b = static_cast<double>(o.min_bytes); b <= static_cast<double>(o.max_bytes) * (1 + 1e-12);
         b *= o.factor)
      sizes.push_back(static_cast<std::size_t>(b));
  }
  print_header(o);
  bool all_ok = true;
  for (int n : o.nranks)
    for (std::size_t size : sizes) {
      const Row r = predict_one(algo, o, model, n, size);
      all_ok = all_ok && r.volume_ok;
      print_row(o, r);
    }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "collscope_predict: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "collscope_predict: error: out of memory (fewer ranks or a larger "
                         "--segment)\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collscope_predict: error: %s\n", e.what());
    return 3;
  }
}
