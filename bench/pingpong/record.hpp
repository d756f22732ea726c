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

// Adds the probe and times of a step's one pair (--pattern pairs), checking its traffic
// against the pattern's theory.
void add_pair(SizeRecord& s, const P2pStep& step, PairResult r);
// Adds step `index` of --pattern rounds or ring (a round, a shift: every pair of it at
// once), checking its traffic against the pattern's theory.
void add_step(SizeRecord& s, const P2pStep& step, const StepResult& r, int iters, int index);

void print_header(std::ostream& os, const PingpongOptions& p, int nranks,
                  const std::vector<std::string>& warnings);
void print_row(std::ostream& os, const SizeRecord& s, int iters);
nlohmann::json to_json(const SizeRecord& s, const PingpongOptions& p, const std::vector<int>& nodes,
                       const std::string& gpu_sharing);

}  // namespace collscope::bench::pingpong
