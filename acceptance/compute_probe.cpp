// compute_probe: how fast each rank computes, without any communication, so that a rank
// that is slow to compute can be told apart from a slow link (scripts/accept,
// acceptance/README.md).
//
// The kernel is the host reducer's float sum out = a + b over --bytes, three distinct
// buffers: the same code, on the same kind of buffers, that a ring allreduce's
// reduce-scatter runs in every step. Ranks take turns (the others wait in a barrier that
// sleeps), so on a machine with fewer cores than ranks a rank is timed alone; each runs
// -w untimed and -n timed kernels. Rank 0 prints one JSON line:
//
//   {"probe": "compute", "kernel": "host reducer, float sum, out = a + b", "bytes": B,
//    "iters": n, "warmup": w, "nranks": N, "hosts": [host of each rank],
//    "times_us": [[rank 0's n times], ...], "time_us": [median per rank],
//    "gbps": [bytes / median per rank], "wrong": [wrong elements per rank]}
//
// Inputs are small integers, so every sum is exact in float and is checked.
// Fault injection (tests): COLLSCOPE_DEBUG_SLOW_COMPUTE=R:F makes rank R run the kernel F
// times in each timed iteration (F an integer from 1 to 1000), as a rank whose compute is
// F times slower would; its links are untouched.
// Exit status: 0; 1 a wrong sum; 2 usage (one line); 3 runtime.
#include <CLI/CLI.hpp>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "collscope/bench/options.hpp"
#include "collscope/errors.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/quiet_barrier.hpp"
#include "collscope/program/stats.hpp"
#include "collscope/reducer.hpp"
#include "probe_turns.hpp"

namespace collscope::bench {
namespace {

using program::parse_command_line;
using program::stats_of;

constexpr const char* kProgram = "compute_probe";

struct ProbeOptions {
  std::size_t bytes = std::size_t{4} << 20;
  int iters = 10, warmup = 2;
  bool show_help = false;
  std::string help_text;
};

ProbeOptions parse_probe_options(int argc, const char* const* argv) {
  ProbeOptions o;
  CLI::App app{"collscope compute_probe: the host reducer's rate on each rank, one rank at a time",
               kProgram};
  std::string bytes = "4M";
  app.add_option("-b,--bytes", bytes, "bytes of each of the three buffers (4M)");
  app.add_option("-n,--iters", o.iters, "timed kernels per rank (10)");
  app.add_option("-w,--warmup", o.warmup, "untimed kernels per rank (2)");
  app.set_help_flag("-h,--help", "print this help and exit");
  if (!parse_command_line(app, argc, argv, o.help_text)) {
    o.show_help = true;
    return o;
  }
  o.bytes = parse_size(bytes, "--bytes");
  if (o.bytes < sizeof(float)) throw UsageError("--bytes must be at least 4 (one float)");
  if (o.iters < 1) throw UsageError("--iters must be at least 1");
  if (o.warmup < 0) throw UsageError("--warmup must not be negative");
  return o;
}

// COLLSCOPE_DEBUG_SLOW_COMPUTE=R:F: how many kernels this rank runs per iteration.
int slowdown_of(int rank) {
  const char* env = std::getenv("COLLSCOPE_DEBUG_SLOW_COMPUTE");
  int who = -1, factor = 1;
  if (!env) return 1;
  if (std::sscanf(env, "%d:%d", &who, &factor) != 2 || factor < 1 || factor > 1000)
    throw UsageError(std::string("COLLSCOPE_DEBUG_SLOW_COMPUTE must be RANK:FACTOR (factor 1 to 1000), got '") +
                     env + "'");
  return who == rank ? factor : 1;
}

struct RankResult {
  std::vector<double> times_us;
  std::uint64_t wrong = 0;
};

// -w untimed then -n timed kernels on this rank's buffers; then the sums are checked.
RankResult run_kernels(const ProbeOptions& o, int repeat) {
  const std::size_t count = o.bytes / sizeof(float);
  std::vector<float> a(count), b(count), out(count);
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i % 1000);
    b[i] = static_cast<float>((i * 7) % 1000);
  }
  const Reducer& reducer = host_reducer();
  auto kernel = [&] {
    reducer.reduce(out.data(), a.data(), b.data(), count, DataType::float32, ReduceOp::sum);
  };
  RankResult r;
  for (int i = 0; i < o.warmup; ++i) kernel();
  for (int i = 0; i < o.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < repeat; ++k) kernel();
    const auto t1 = std::chrono::steady_clock::now();
    r.times_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  for (std::size_t i = 0; i < count; ++i) r.wrong += out[i] != a[i] + b[i];
  return r;
}

std::vector<std::string> gather_hosts(MPI_Comm comm, int rank, int nranks) {
  std::string mine = acceptance::host_name();
  mine.resize(MPI_MAX_PROCESSOR_NAME, '\0');
  std::vector<char> all(rank == 0 ? mine.size() * static_cast<std::size_t>(nranks) : 0);
  MPI_Gather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
             MPI_CHAR, 0, comm);
  std::vector<std::string> hosts;
  for (std::size_t r = 0; r < all.size(); r += MPI_MAX_PROCESSOR_NAME)
    hosts.emplace_back(all.data() + r);  // NUL-terminated by the resize
  return hosts;
}

nlohmann::json record(const ProbeOptions& o, const std::vector<std::string>& hosts,
                      const std::vector<double>& times, const std::vector<std::uint64_t>& wrong) {
  const std::size_t n = hosts.size(), iters = static_cast<std::size_t>(o.iters);
  nlohmann::json j{{"probe", "compute"}, {"kernel", "host reducer, float sum, out = a + b"},
                   {"bytes", o.bytes}, {"iters", o.iters}, {"warmup", o.warmup},
                   {"nranks", n}, {"hosts", hosts}, {"wrong", wrong}};
  nlohmann::json per_rank = nlohmann::json::array(), median = nlohmann::json::array(),
                 gbps = nlohmann::json::array();
  for (std::size_t r = 0; r < n; ++r) {
    const std::vector<double> mine(times.begin() + static_cast<std::ptrdiff_t>(r * iters),
                                   times.begin() + static_cast<std::ptrdiff_t>((r + 1) * iters));
    const double m = stats_of(mine).median;
    per_rank.push_back(mine);
    median.push_back(m);
    gbps.push_back(m > 0 ? static_cast<double>(o.bytes) / (m * 1e3) : 0.0);
  }
  j["times_us"] = per_rank;
  j["time_us"] = median;
  j["gbps"] = gbps;
  return j;
}

int main_on_all_ranks(int argc, char** argv, int rank, int nranks) {
  const ProbeOptions o = parse_probe_options(argc, argv);
  if (o.show_help) {
    if (rank == 0) std::cout << o.help_text;
    return kExitOk;
  }
  const int repeat = slowdown_of(rank);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const std::vector<std::string> hosts = gather_hosts(comm, rank, nranks);
  RankResult mine;
  acceptance::take_turns(comm, rank, acceptance::every_rank(nranks),
                         [&] { mine = run_kernels(o, repeat); });
  std::vector<double> times(rank == 0 ? static_cast<std::size_t>(o.iters * nranks) : 0);
  MPI_Gather(mine.times_us.data(), o.iters, MPI_DOUBLE, times.data(), o.iters, MPI_DOUBLE, 0, comm);
  std::vector<std::uint64_t> wrong(rank == 0 ? static_cast<std::size_t>(nranks) : 0);
  MPI_Gather(&mine.wrong, 1, MPI_UINT64_T, wrong.data(), 1, MPI_UINT64_T, 0, comm);
  MPI_Comm_free(&comm);
  if (rank != 0) return kExitOk;  // rank 0's code is every rank's (probe_main)
  const bool any_wrong =
      std::any_of(wrong.begin(), wrong.end(), [](std::uint64_t w) { return w > 0; });
  return acceptance::print_record(record(o, hosts, times, wrong), any_wrong);
}

}  // namespace
}  // namespace collscope::bench

int main(int argc, char** argv) {
  return collscope::acceptance::probe_main(collscope::bench::kProgram, argc, argv,
                                           collscope::bench::main_on_all_ranks);
}
