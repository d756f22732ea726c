// pingpong: latency and bandwidth between two ranks (--pairs A,B, default 0,1) or between
// every pair (--pairs all, N x N matrices), so a slow link or a slow rank stands out.
//
//   rank a                          rank b
//     | ---- ping: `bytes` ---->      |      latency   = round trip / 2, timed on rank a
//     | <--- pong: the same bytes --  |      bandwidth = bytes / latency (GB = 1e9 B)
//
// Per (size, pair): one untimed probe round trip, whose traffic is counted and compared
// with theory (always) and whose payload is compared bit for bit (-c 1); then -w warmup
// and -n timed round trips, back to back. Every round trip is one Comm call (a fresh tag
// sequence). Each rank keeps one Comm per peer, so a pair's sequence numbers stay in step
// while other pairs run. A 0-byte size is a signal each way: one message of 0 bytes, as
// the executor counts it.
// Ranks outside the pair wait in a barrier that sleeps (MPI_Ibarrier + MPI_Test), so they
// take no CPU from the measurement on an oversubscribed node.
//
// --pairs all measures every a < b in turn; both directions are the same round trip, so
// [a][b] = [b][a]; the diagonal is 0, "not measured (self)". Its record per size holds the
// matrices; time_us, time_us_min, time_us_max are the median, min and max over the pairs
// of each pair's median; sent/recv bytes add up the probes of all pairs.
//
// --pattern rounds|ring load many links at once, so that a link is seen under load as well
// as alone (every pair is still reported, N x N):
//   rounds  a round-robin tournament (the circle method): N-1 rounds (N odd: N, one rank
//           resting in each) of disjoint pairs covering every rank; all pairs of a round
//           do their round trips at the same time. Every pair meets once; [a][b] = [b][a]
//           is its median half round trip, as in --pairs all.
//   ring    shift k = 1 .. N-1: every rank sends the message to r+k and receives one from
//           r-k in one call, all ranks at once, so every link direction carries one
//           message. Each rank times its call; [r][r+k] is the median time of the call of
//           r+k, the link's receiver: one way, not half a round trip, and not symmetric
//           (a send completes when the transport has taken its bytes, so the sender's
//           time says little about the link).
// Each round or shift is one schedule call per rank, counted by the executor's Traffic
// counter and compared cell by cell with its exact N x N volume; every call starts after
// a barrier. Payloads depend on (size, sender), so a message from the wrong rank fails
// the check. The record says which pattern in `algorithm` (pingpong, rounds, ring).
// Device memory (-m device, --path, -t nccl): the payload and landing buffers live on the
// GPU, are filled and read back outside the timed calls, and a call ends when its stream
// has. Limits: no bidirectional streaming.
//
// The patterns are the catalogue's (algorithms.def's COLLSCOPE_P2P lines): their steps,
// schedules and theory are in collectives/p2p/ and collectives/theory/, their calls go
// through run_p2p (runtime/p2p.hpp), counted and watched as a collective's.
// The parts here: options.cpp (the command line), measure.cpp (the calls on every rank,
// gathered on rank 0), record.cpp (one size's record: checked, printed, as JSON), this
// file (the run).
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/errors.hpp"
#include "collscope/program/json_lines.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/rows.hpp"
#include "collscope/program/text.hpp"
#include "collscope/program/watchdog.hpp"
#include "collscope/results/results_file.hpp"
#include "measure.hpp"
#include "options.hpp"
#include "record.hpp"

namespace collscope::bench::pingpong {
namespace {

// Every step of the run in turn: one pair at a time (pairs), or a round or a shift with
// all of its pairs at once.
SizeRecord measure_size(PingPong& pp, std::size_t bytes) {
  const PingpongOptions& p = pp.options();
  const std::size_t cells = static_cast<std::size_t>(pp.nranks()) * static_cast<std::size_t>(pp.nranks());
  SizeRecord s{bytes, pp.nranks(), p.all_pairs, p.common.check, {}, std::vector<RankVolume>(cells),
               std::vector<RankVolume>(cells), 0, {}, p.pattern};
  const std::vector<P2pStep> steps = steps_to_measure(p, pp.nranks());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (p.pattern == Pattern::pairs) {
      PairResult r = pp.measure_pair(steps[i], bytes);
      if (pp.rank() == 0) add_pair(s, steps[i], std::move(r));
    } else {
      const StepResult r = pp.measure_step(steps[i], bytes);
      if (pp.rank() == 0) add_step(s, steps[i], r, p.common.iters, static_cast<int>(i));
    }
  }
  return s;
}

// One size's row on rank 0: stdout and -J (program/rows.hpp), and the HDF5 file.
void report(const SizeRecord& s, const PingPong& pp, program::RowOutput& out,
            results::ResultsFile* h5) {
  const PingpongOptions& p = pp.options();
  const nlohmann::json row = to_json(s, p, pp.nodes(), pp.gpu_sharing());
  out.write(row.dump(), [&](std::ostream& os) { print_row(os, s, p.common.iters); });
  if (h5) h5->append_pingpong(row);  // on disk when it returns
}

int finish(program::RowOutput& out, bool failed, int rows) {
  if (out.table())
    std::cout << "# rows: " << rows << "   check: " << (failed ? "FAILED" : "OK") << std::endl;
  if (!out.finish(kProgram)) return kExitRuntime;
  return failed ? kExitVerifyFailed : kExitOk;
}

int run(PingPong& pp, results::ResultsFile* h5, const std::vector<std::string>& warnings) {
  const PingpongOptions& p = pp.options();
  program::RowOutput out(p.common.format == OutputFormat::table,
                         program::JsonLines::open_on_root(p.common.json_path, pp.ctrl()));
  if (pp.rank() == 0 && out.table()) print_header(std::cout, p, pp.nranks(), warnings);
  if (pp.rank() == 0 && !out.table()) program::print_warnings(kProgram, warnings);
  bool failed = false;
  int rows = 0;
  for (std::size_t bytes : sweep_sizes(p.common)) {
    const SizeRecord s = measure_size(pp, bytes);
    pp.release_freed_buffers();  // the device buffers of this size's pairs
    if (pp.rank() != 0) continue;
    report(s, pp, out, h5);
    failed = failed || s.wrong > 0 || !s.volume_error.empty();
    ++rows;
  }
  if (h5) h5->close();
  int code = pp.rank() == 0 ? finish(out, failed, rows) : kExitOk;
  MPI_Bcast(&code, 1, MPI_INT, 0, pp.ctrl());  // every rank exits alike
  return code;
}

// `pingpong --print-rounds N`: --pattern rounds' rounds at N ranks (the catalogue's
// steps) as one JSON line, [[[a, b], ...], ...], for the acceptance judge (which pairs
// ran at once). A pure query: answered before MPI starts.
int print_rounds(int argc, char** argv) {
  const std::optional<int> n = argc == 3 ? parse_rank(argv[2]) : std::nullopt;
  if (!n || *n < 2) {
    std::fprintf(stderr, "%s: error: --print-rounds needs one rank count N >= 2, and nothing else\n",
                 kProgram);
    return kExitUsage;
  }
  nlohmann::json rounds = nlohmann::json::array();
  for (const P2pStep& round : p2p_entry(Pattern::rounds).steps(*n)) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const Pair& p : round.pairs) pairs.push_back({p.a, p.b});
    rounds.push_back(std::move(pairs));
  }
  std::cout << rounds.dump() << "\n";
  return kExitOk;
}

int main_on_all_ranks(int argc, char** argv, int rank, int nranks) {
  PingpongOptions opts = parse_pingpong_options(argc, argv);
  if (opts.common.show_help) {
    if (rank == 0) std::cout << opts.common.help_text;
    return kExitOk;
  }
  check_pairs(opts, nranks);
  set_wait_policy(opts.common.wait);
  const double timeout_s = opts.common.timeout_s;
  PingPong pp(std::move(opts), MPI_COMM_WORLD);
  program::Watchdog watchdog(timeout_s, rank, kProgram);
  const results::RunAttributes attributes = results::collect_run_attributes(argc, argv, MPI_COMM_WORLD);
  // -O: opened on rank 0 once every input is known good; a bad file fails on all ranks.
  std::unique_ptr<results::ResultsFile> h5;
  if (!pp.options().common.output_path.empty())
    h5 = results::open_results_on_root(pp.options().common.output_path, attributes, MPI_COMM_WORLD);
  return run(pp, h5.get(), attributes.machine.warnings);
}

}  // namespace
}  // namespace collscope::bench::pingpong

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--print-rounds")
    return collscope::bench::pingpong::print_rounds(argc, argv);
  return collscope::program::run_mpi_main(collscope::bench::pingpong::kProgram, argc, argv,
                                          collscope::bench::pingpong::main_on_all_ranks);
}

