// Reads a results file back (what the tests and C++ tools need; Python uses h5py).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "collscope/results/run_attributes.hpp"

namespace collscope::results {

struct StoredRun {
  std::int64_t run_id = -1;
  RunAttributes attributes;
};

struct StoredRow {
  std::int64_t run_id = -1;
  nlohmann::json fields;  // the row as it was appended
};

struct ResultsContents {
  int schema_version = 0;
  std::string created_by, created_utc;  // root attributes
  std::vector<StoredRun> runs;
  std::vector<StoredRow> collective, pingpong;  // incomplete rows (run_id -1) left out
  std::vector<StoredRow> layer;                 // none when the file has no /layer
};

// Throws UsageError / RuntimeError as ResultsFile::open_for_append does (never writes).
ResultsContents read_results(const std::string& path);

}  // namespace collscope::results
