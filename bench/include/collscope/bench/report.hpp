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
};

void print_table_header(std::ostream& os, const RunInfo& info);
void print_table_row(std::ostream& os, const Measurement& m);
void print_table_footer(std::ostream& os, int rows, std::uint64_t wrong_total,
                        int volume_mismatches, double avg_busbw);

nlohmann::json to_json(const Measurement& m);

}  // namespace collscope::bench
