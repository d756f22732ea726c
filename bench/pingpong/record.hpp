// pingpong's record of one size, on rank 0: the pairs' results added up and checked cell
// by cell against the theory, printed as a table row and as one JSON record.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "collscope/volume.hpp"
#include "measure.hpp"
#include "options.hpp"

namespace collscope::bench::pingpong {

struct SizeRecord {
  std::size_t bytes = 0;
  int nranks = 0;
  bool all_pairs = false, checked = false;
  std::vector<PairResult> pairs;
  std::vector<RankVolume> traffic, theory;  // N x N, summed over the pairs' probes
  std::uint64_t wrong = 0;
  std::string volume_error;  // empty: measured == theory, cell by cell
  Pattern pattern = Pattern::pairs;
};

// Adds one pair's probe and times, checking its traffic against a pair's round trip.
void add_pair(SizeRecord& s, PairResult r);
// Adds round `index` of --pattern rounds (every pair of it at once).
void add_round(SizeRecord& s, const std::vector<Pair>& round, const StepResult& r, int iters,
               int index);
// Adds shift k of --pattern ring.
void add_shift(SizeRecord& s, int k, const StepResult& r, int iters);

void print_header(std::ostream& os, const PingpongOptions& p, int nranks,
                  const std::vector<std::string>& warnings);
void print_row(std::ostream& os, const SizeRecord& s, int iters);
nlohmann::json to_json(const SizeRecord& s, const PingpongOptions& p, const std::vector<int>& nodes,
                       const std::string& gpu_sharing);

}  // namespace collscope::bench::pingpong
