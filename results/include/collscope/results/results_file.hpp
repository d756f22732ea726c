// Results in HDF5 (results/SCHEMA.md): a file holds many runs, each row carries its run.
//
//   auto attrs = results::collect_run_attributes(argc, argv, comm);       // every rank
//   auto out = results::open_results_on_root(opts.output_path, attrs, comm);  // every rank
//   if (out) out->append_collective(bench::to_json(m));                   // rank 0
//
// Every append is on disk before it returns (crash safety: SCHEMA.md).
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "collscope/results/run_attributes.hpp"

namespace collscope::results {

inline constexpr int kSchemaVersion = 5;      // what this build writes (SCHEMA.md)
inline constexpr int kOldestReadableVersion = 1;  // what it still reads

class ResultsFile {
 public:
  // Opens `path` for appending, creating it when it does not exist, and adds the run.
  // Throws UsageError when `path` exists but is not a results file of this schema
  // version (not HDF5, another program's HDF5, another version) and RuntimeError when it
  // cannot be created, read or written (permissions, truncated or damaged file, locked
  // by another writer). Nothing that exists is ever overwritten.
  static ResultsFile open_for_append(const std::string& path, const RunAttributes& run);

  ResultsFile(ResultsFile&&) noexcept;
  ResultsFile& operator=(ResultsFile&&) noexcept;
  ~ResultsFile();  // close(), errors ignored

  // One row, exactly as bench::to_json(Measurement) / pingpong's JSON record makes it.
  // Throws RuntimeError for a field the schema has no column for, and on write errors.
  void append_collective(const nlohmann::json& row);
  void append_pingpong(const nlohmann::json& row);
  // One layer record, exactly as collscope::layers::to_json(LayerRecord) makes it (an
  // ordered_json converts: nlohmann::json(record)). Same errors as above; a file made
  // before /layer existed gets the group here (SCHEMA.md, "/layer").
  void append_layer(const nlohmann::json& record);

  std::int64_t run_id() const;
  const std::string& path() const;
  void close();  // flushes and releases the file; throws RuntimeError on errors

 private:
  struct Impl;
  explicit ResultsFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Rank 0 opens `path` (nothing to do when it is empty: nullptr everywhere); every rank
// then throws the same UsageError or RuntimeErrorOnAllRanks when that failed, so the
// harness reports it once and exits 2 or 3. Returns the file on rank 0, nullptr elsewhere.
std::unique_ptr<ResultsFile> open_results_on_root(const std::string& path, const RunAttributes& run,
                                                  MPI_Comm comm);

}  // namespace collscope::results
