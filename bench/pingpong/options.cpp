// pingpong's command line (options.hpp).
#include "options.hpp"

#include <CLI/CLI.hpp>

#include "collscope/errors.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/runtime/p2p.hpp"

namespace collscope::bench::pingpong {
namespace {

// The catalogue's patterns as a choice: "pairs, rounds or ring".
std::string pattern_choices() {
  std::string out;
  const auto all = all_p2p_patterns();
  for (std::size_t i = 0; i < all.size(); ++i)
    out += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + std::string(all[i].name);
  return out;
}

// --pattern: rounds and ring measure every pair, so --pairs may only be all (or absent).
void parse_pattern(const std::string& text, bool pairs_given, PingpongOptions& p) {
  const std::optional<Pattern> pattern = p2p_by_name(text);
  if (!pattern) throw UsageError("bad --pattern '" + text + "' (expected " + pattern_choices() + ")");
  p.pattern = *pattern;
  if (p.pattern == Pattern::pairs) return;
  if (pairs_given && !p.all_pairs)
    throw UsageError("--pattern " + text + " measures every pair: --pairs must be all or left out");
  p.all_pairs = true;
}

void parse_pairs(const std::string& text, PingpongOptions& p) {
  if (text == "all") {
    p.all_pairs = true;
    return;
  }
  const std::size_t comma = text.find(',');
  const auto a = parse_rank(text.substr(0, comma));
  const auto b = comma == std::string::npos ? std::nullopt : parse_rank(text.substr(comma + 1));
  if (!a || !b)
    throw UsageError("bad --pairs '" + text + "' (expected all, or two ranks A,B such as 0,1)");
  p.pair = {*a, *b};
}

}  // namespace

std::string_view pattern_name(Pattern p) { return p2p_entry(p).name; }

std::optional<int> parse_rank(const std::string& text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoi(text);
}

PingpongOptions parse_pingpong_options(int argc, const char* const* argv) {
  PingpongOptions p;
  Options& o = p.common;
  CLI::App app{"collscope pingpong: latency and bandwidth between two ranks, or every pair",
               kProgram};
  std::string pairs = "0,1", pattern = "pairs";
  SweepText sweep;
  add_sweep_options(app, {"0, 8, 1K, 16M, 1G", "round trips per size and pair",
                          "compare the payload bit for bit (0 or 1); byte counts are always checked"},
                    sweep, o);
  DeviceText device;
  ChoiceText text;
  app.add_option("-t,--transport", text.transport, "mpi, ucx or nccl (GPU memory)");
  app.add_option("-m,--memory", device.memory, "host or device (every rank's buffers on its GPU)");
  app.add_option("--path", text.path, "device memory: cuda_aware, staged or ipc");
  add_device_flags(app, device, o.fuse);
  CLI::Option* pairs_option = app.add_option("--pairs", pairs, "two ranks A,B (default 0,1), or all");
  app.add_option("--pattern", pattern,
                 "pairs (one pair at a time), rounds (disjoint pairs at once) or ring (r -> r+k at once)");
  add_output_flags(app, {"JSON lines", "the results to this HDF5 file"}, text.format,
                   o.json_path, o.output_path);
  add_timeout_flag(app, "a round trip", o.timeout_s);
  app.set_help_flag("-h,--help", "print this help and exit");
  if (!program::parse_command_line(app, argc, argv, o.help_text)) {
    o.show_help = true;
    return p;
  }
  apply_sweep_options(sweep, o);
  parse_pairs(pairs, p);
  parse_pattern(pattern, pairs_option->count() > 0, p);
  read_device_flags(app, device, o);
  apply_common_options(text, o);
  return p;
}

void check_pairs(const PingpongOptions& p, int nranks) {
  if (nranks < 2)
    throw UsageError("pingpong needs at least 2 ranks, got " + std::to_string(nranks));
  if (p.all_pairs) return;
  const auto [a, b] = p.pair;
  if (a == b)
    throw UsageError("--pairs " + std::to_string(a) + "," + std::to_string(b) +
                     ": the two ranks must differ");
  for (int r : {a, b})
    if (r >= nranks)
      throw UsageError("--pairs " + std::to_string(a) + "," + std::to_string(b) + ": rank " +
                       std::to_string(r) + " is out of range for " + std::to_string(nranks) +
                       " ranks");
}

std::vector<P2pStep> steps_to_measure(const PingpongOptions& p, int nranks) {
  if (!p.all_pairs) return {P2pStep{{p.pair}}};
  return p2p_entry(p.pattern).steps(nranks);
}

}  // namespace collscope::bench::pingpong
