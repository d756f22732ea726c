// pingpong's command line: which pairs, which pattern, and the options every benchmark
// shares (sizes, iterations, check, transport, output, timeout).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/bench/options.hpp"
#include "collscope/p2p.hpp"

namespace collscope::bench::pingpong {

inline constexpr const char* kProgram = "pingpong";

using Pair = patterns::RankPair;  // a starts the round trip

// The catalogue's point-to-point patterns (algorithms.def): pairs, one pair at a time
// (--pairs); rounds, ring: many pairs at once (every pair).
using Pattern = P2pPattern;

struct PingpongOptions {
  Options common;  // sizes, iterations, check, transport, output, timeout
  bool all_pairs = false;
  Pair pair;
  Pattern pattern = Pattern::pairs;
};

std::string_view pattern_name(Pattern p);

// A rank or a rank count: up to 7 digits, nothing else; nullopt otherwise.
std::optional<int> parse_rank(const std::string& text);

// Throws UsageError on a bad line; sets common.show_help for -h.
PingpongOptions parse_pingpong_options(int argc, const char* const* argv);

// Needs the number of ranks, nothing else: identical on every rank, before any message.
void check_pairs(const PingpongOptions& p, int nranks);

// The steps of the run, in order: the pattern's at N ranks (pairs: every a < b), or
// --pairs A,B's one pair.
std::vector<P2pStep> steps_to_measure(const PingpongOptions& p, int nranks);

}  // namespace collscope::bench::pingpong
