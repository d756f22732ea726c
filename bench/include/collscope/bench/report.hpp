// Reporters: the nccl-tests-like table and JSON lines. Rank 0 only.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "collscope/bench/measurement.hpp"
#include "collscope/bench/options.hpp"

namespace collscope::bench {

struct RunInfo {
  std::string program, collective, algorithm, transport, command_line;
  std::vector<std::string> transport_env;
  int nranks = 1;
  const Options* options = nullptr;
  // Why this run's figures may not be trusted (the machine, the GPUs' sharing), one line
  // each: printed under the table's header.
  std::vector<std::string> warnings;
};

// What the table's footer sums up.
struct TableTotals {
  int rows = 0, volume_mismatches = 0, noisy = 0;
  std::uint64_t wrong = 0;
  double busbw_sum = 0;
};

void print_table_header(std::ostream& os, const RunInfo& info);
void print_table_row(std::ostream& os, const Measurement& m);
void print_table_footer(std::ostream& os, const TableTotals& totals);

nlohmann::json to_json(const Measurement& m);

}  // namespace collscope::bench
