// The tables of a results file (results/SCHEMA.md): which JSON field of a row goes to
// which column, and how JSON's null and absent keys are stored. Every table exists in
// each schema version this build reads; the version argument picks one (default: the
// version this build writes).
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collscope/results/results_file.hpp"
#include "record.hpp"

namespace collscope::results {

inline constexpr const char* kFormatName = "collscope results";

// How a row says "no value" for a field, and so how the column stores it: -1 (ints,
// pairs), NaN (doubles), "" (text), offset -1 (pools).
enum class Missing {
  never,   // the key is always there with a value
  null,    // the key is there, null
  absent,  // the key is left out
};

struct ScalarSpec {
  const char* key;
  Kind kind;
  std::size_t text_size = 0;
  Missing missing = Missing::never;
};

struct PairSpec {  // [a, b] -> columns key_a, key_b
  const char* key;
  Missing missing;
};

struct TextListSpec {  // a list of strings, stored joined by '\n'
  const char* key;
  std::size_t text_size;
};

struct RankColumn {
  const char* key;     // the per-rank JSON array
  const char* column;  // its column in the ranks table
};

// Per-rank arrays that are known or unknown together; unknown: 0 in the ranks table and
// `known` false in the row; the JSON value then is null (or [] when empty_when_missing).
struct RankGroupSpec {
  const char* known;
  Kind kind;
  std::vector<RankColumn> columns;
  bool empty_when_missing = false;
};

// A flat array per row in a 1-D pool dataset; the row holds <key>_offset and <key>_count.
struct PoolSpec {
  const char* key;
  Kind kind;            // u64 or f64
  bool square = false;  // JSON: N x N nested lists (else a flat list)
  Missing missing = Missing::never;
};

struct TableSpec {
  std::string name;  // the group: "collective", "pingpong"
  std::vector<ScalarSpec> scalars;
  std::vector<PairSpec> pairs;
  std::vector<TextListSpec> text_lists;
  std::vector<RankGroupSpec> rank_groups;
  std::vector<PoolSpec> pools;
  hsize_t row_chunk = 64, rank_chunk = 1024;
  Layout rows, ranks;  // derived from the above
  // Child tables in the same group (the layer table's sites and checks): the row holds
  // <child>_offset and <child>_count, after the pools' columns.
  std::vector<std::string> children = {};
};

const TableSpec& collective_table(int version = kSchemaVersion);
const TableSpec& pingpong_table(int version = kSchemaVersion);
// Made in every file, checked on open.
const std::vector<const TableSpec*>& row_tables(int version = kSchemaVersion);
const Layout& runs_layout(int version = kSchemaVersion);
const Layout& run_gpus_layout(int version = kSchemaVersion);  // version 2 on
inline constexpr hsize_t kRunGpuChunk = 64;

// The /layer group (SCHEMA.md, "/layer"): made in every new file, and in an older one on
// its first layer row. Its rows table is layer_table(); its sites and checks tables are
// plain record tables with these layouts and specs.
const TableSpec& layer_table(int version = kSchemaVersion);
// /layer/sites after `row`, in a file of `version`
const std::vector<ScalarSpec>& layer_site_scalars(int version = kSchemaVersion);
const std::vector<RankGroupSpec>& layer_site_groups();  // /layer/site_ranks
const std::vector<ScalarSpec>& layer_check_scalars();  // /layer/checks after `row`
const Layout& layer_sites_layout(int version = kSchemaVersion);
const Layout& layer_site_ranks_layout();
const Layout& layer_checks_layout();
inline constexpr hsize_t kLayerRowChunk = 8;     // /layer/rows
inline constexpr hsize_t kLayerChildChunk = 64;  // /layer/sites, /layer/checks
inline constexpr hsize_t kLayerRankChunk = 256;  // /layer/ranks, /layer/site_ranks

inline constexpr hsize_t kRunChunk = 4;
inline constexpr hsize_t kPoolChunk = 16384;  // elements

// Version 1 named two collective columns and the layer's closed-form figure "seed_*";
// version 2 calls them "textbook_*" (docs/textbook-formulas.md). Decoding a version-1
// row renames them, so readers see version 2's names.
nlohmann::json rename_version1_fields(nlohmann::json row);
// The (version 1, version 2) names of a group's renamed columns: "collective", "layer".
std::vector<std::pair<std::string, std::string>> version1_renames(std::string_view group);

}  // namespace collscope::results
