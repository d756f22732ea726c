// A layer record (layers/framework/record.cpp) <-> the /layer tables (SCHEMA.md, "/layer"): the
// row with its ranks and times, its call sites with their per-rank records, its checks.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "record.hpp"
#include "rows.hpp"

namespace collscope::results {

// Indexes are relative: sites' ranks_offset and site_ranks' `site` count from this
// record's first site / site rank record; the writer adds where they go in the file and
// sets `row` (sites, checks, ranks) and run_id.
struct EncodedLayer {
  EncodedRow row;  // layer_table(): the row, its ranks and its times_us
  std::vector<Record> sites, site_ranks, checks;
  std::size_t payload_bytes() const;
};

// RuntimeError naming the field for a record the schema cannot hold (unknown or missing
// fields, wrong types, per-rank arrays of the wrong length, shape/algorithms too long).
EncodedLayer encode_layer(const nlohmann::json& record);

struct LayerData {
  TableData table;  // rows, ranks, times_us
  std::vector<Record> sites, site_ranks, checks;
};

// The record of table.rows[i], as the writer was given it.
nlohmann::json decode_layer(const LayerData& data, std::size_t i, int version = kSchemaVersion);

}  // namespace collscope::results
