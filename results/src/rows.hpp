// A JSON row <-> its records: the row, its per-rank rows and its pool arrays.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "record.hpp"
#include "schema.hpp"

namespace collscope::results {

struct PoolValues {
  const PoolSpec* pool = nullptr;
  bool present = false;  // false: the JSON value was null or absent (offset -1)
  std::vector<std::uint64_t> u64;
  std::vector<double> f64;
  std::size_t size() const { return pool->kind == Kind::u64 ? u64.size() : f64.size(); }
};

struct EncodedRow {
  Record row;
  std::vector<Record> ranks;  // `row` and `rank` columns set by the writer
  std::vector<PoolValues> pools;
  std::size_t payload_bytes() const;
};

// Throws collscope::RuntimeError naming the field for a row the schema cannot hold
// (an unknown or missing field, a wrong type, a per-rank array of the wrong length).
EncodedRow encode_row(const TableSpec& table, const nlohmann::json& row);

// A whole table as read back: rows, ranks and pools.
struct TableData {
  std::vector<Record> rows, ranks;
  std::map<std::string, std::vector<std::uint64_t>> u64_pools;
  std::map<std::string, std::vector<double>> f64_pools;
};

// The JSON of rows[i], as the writer was given it (text cut to its field's size).
nlohmann::json decode_row(const TableSpec& table, const TableData& data, std::size_t i);

// The pieces of the above, for tables nested in a row (the layer table's sites, checks).
// RuntimeError naming the first key of `object` outside `known` (where: the table's name).
void reject_unknown_keys(const std::set<std::string>& known, const nlohmann::json& object,
                         const std::string& where);
void encode_scalars(Record& r, const std::vector<ScalarSpec>& scalars, const nlohmann::json& object);
// Fills one group's columns of `ranks` (one record per rank); returns whether it is known.
bool encode_rank_group(std::vector<Record>& ranks, const RankGroupSpec& g, const nlohmann::json& object);
void decode_scalars(nlohmann::json& object, const Record& r, const std::vector<ScalarSpec>& scalars);
// The group's arrays from ranks[r.ranks_offset, + r.ranks_count).
void decode_rank_group(nlohmann::json& object, const Record& r, const RankGroupSpec& g,
                       const std::vector<Record>& ranks);

}  // namespace collscope::results
