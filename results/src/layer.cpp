#include "layer.hpp"

#include <set>
#include <string>

#include "collscope/errors.hpp"
#include "schema.hpp"

namespace collscope::results {
namespace {

using nlohmann::json;

// The record's closed-form figure (docs/textbook-formulas.md), stored as one column per
// key with the prefix; version 1 called it seed_figure, its columns seed_*, and its last
// key exact_over_seed.
constexpr const char* kFigure = "textbook_figure";
constexpr const char* kFigurePrefix = "textbook_";
constexpr const char* kFigurePrefixV1 = "seed_";
const std::vector<std::string> kFigureKeys{"source",      "formula",          "elements", "bytes",
                                           "explanation", "exact_sent_bytes", "exact_over_formula"};
// The record's keys that are not columns of the rows table.
const std::set<std::string> kNested{"shape", "algorithms", kFigure, "collectives", "checks"};

// Column of figure key `key` in a file of `version`.
std::string figure_column(const std::string& key, int version) {
  if (version != 1) return kFigurePrefix + key;
  return kFigurePrefixV1 + (key == "exact_over_formula" ? std::string("exact_over_seed") : key);
}

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw RuntimeError("results: layer field '" + key + "': " + why);
}

const json& member(const json& record, const std::string& key) {
  const auto it = record.find(key);
  if (it == record.end()) fail(key, "missing from the record");
  return *it;
}

// A small object (shape, algorithms) as its JSON text; refused rather than cut when it
// does not fit its column, since cut text would not read back as JSON.
std::string object_text(const json& record, const char* key) {
  const json& v = member(record, key);
  if (!v.is_object()) fail(key, "is not a JSON object");
  const std::string text = v.dump();
  if (text.size() >= layer_table().rows.field(key).text_size) fail(key, "is too long for its column");
  return text;
}

std::set<std::string> keys_of(const std::vector<ScalarSpec>& scalars, const std::vector<RankGroupSpec>& groups) {
  std::set<std::string> known;
  for (const ScalarSpec& s : scalars) known.insert(s.key);
  for (const RankGroupSpec& g : groups)
    for (const RankColumn& c : g.columns) known.insert(c.key);
  return known;
}

const json& array_member(const json& record, const char* key) {
  const json& v = member(record, key);
  if (!v.is_array()) fail(key, "is not a list");
  return v;
}

void encode_sites(EncodedLayer& e, const json& record, std::size_t nranks) {
  static const std::set<std::string> known = keys_of(layer_site_scalars(), layer_site_groups());
  for (const json& site : array_member(record, "collectives")) {
    reject_unknown_keys(known, site, "layer sites");
    Record r(layer_sites_layout());
    encode_scalars(r, layer_site_scalars(), site);
    std::vector<Record> ranks(nranks, Record(layer_site_ranks_layout()));
    for (std::size_t i = 0; i < nranks; ++i) {
      ranks[i].set_int("site", static_cast<std::int64_t>(e.sites.size()));
      ranks[i].set_int("rank", static_cast<std::int64_t>(i));
    }
    for (const RankGroupSpec& g : layer_site_groups()) r.set_bool(g.known, encode_rank_group(ranks, g, site));
    r.set_int("ranks_offset", static_cast<std::int64_t>(e.site_ranks.size()));
    r.set_int("ranks_count", static_cast<std::int64_t>(nranks));
    e.sites.push_back(std::move(r));
    e.site_ranks.insert(e.site_ranks.end(), ranks.begin(), ranks.end());
  }
}

void encode_checks(EncodedLayer& e, const json& record) {
  static const std::set<std::string> known = keys_of(layer_check_scalars(), {});
  for (const json& check : array_member(record, "checks")) {
    reject_unknown_keys(known, check, "layer checks");
    Record r(layer_checks_layout());
    encode_scalars(r, layer_check_scalars(), check);
    e.checks.push_back(std::move(r));
  }
}

}  // namespace

std::size_t EncodedLayer::payload_bytes() const {
  std::size_t n = row.payload_bytes();
  for (const auto* records : {&sites, &site_ranks, &checks})
    if (!records->empty()) n += records->size() * records->front().layout().size();
  return n;
}

EncodedLayer encode_layer(const json& record) {
  if (!record.is_object()) throw RuntimeError("results: a layer row must be a JSON object");
  json flat = json::object();
  for (const auto& item : record.items()) {
    if (kNested.count(item.key())) continue;
    if (item.key().rfind(kFigurePrefix, 0) == 0)  // a column of textbook_figure's
      fail(item.key(), "has no column in the layer table (update results/ and SCHEMA.md)");
    flat[item.key()] = item.value();
  }
  flat["shape"] = object_text(record, "shape");
  flat["algorithms"] = object_text(record, "algorithms");
  const json& figure = member(record, kFigure);
  static const std::set<std::string> figure_keys(kFigureKeys.begin(), kFigureKeys.end());
  reject_unknown_keys(figure_keys, figure, "layer textbook_figure");
  for (const auto& item : figure.items()) flat[kFigurePrefix + item.key()] = item.value();
  EncodedLayer e{encode_row(layer_table(), flat), {}, {}, {}};
  encode_sites(e, record, e.row.ranks.size());
  encode_checks(e, record);
  e.row.row.set_int("sites_count", static_cast<std::int64_t>(e.sites.size()));
  e.row.row.set_int("checks_count", static_cast<std::int64_t>(e.checks.size()));
  return e;
}

namespace {

json parse_text(const std::string& key, const json& text) {
  try {
    return json::parse(text.get<std::string>());
  } catch (const json::exception& e) {
    throw RuntimeError("results: layer column '" + key + "' is not JSON: " + e.what());
  }
}

// records[offset, offset + count) of a row, checked against the table's length.
std::pair<std::size_t, std::size_t> slice(const Record& row, const std::string& child, std::size_t size) {
  const std::int64_t offset = row.get_int(child + "_offset"), count = row.get_int(child + "_count");
  if (offset < 0 || count < 0 || static_cast<std::size_t>(offset + count) > size)
    throw RuntimeError("results: /layer/" + child + " is too short for a row");
  return {static_cast<std::size_t>(offset), static_cast<std::size_t>(offset + count)};
}

}  // namespace

json decode_layer(const LayerData& d, std::size_t i, int version) {
  json out = decode_row(layer_table(version), d.table, i);
  const Record& row = d.table.rows.at(i);
  out["shape"] = parse_text("shape", out["shape"]);
  out["algorithms"] = parse_text("algorithms", out["algorithms"]);
  json figure = json::object();
  for (const std::string& key : kFigureKeys) {
    figure[key] = out[figure_column(key, version)];
    out.erase(figure_column(key, version));
  }
  out[kFigure] = figure;
  json sites = json::array();
  const auto [sites_begin, sites_end] = slice(row, "sites", d.sites.size());
  for (std::size_t s = sites_begin; s < sites_end; ++s) {
    json site = json::object();
    decode_scalars(site, d.sites[s], layer_site_scalars(version));
    const auto [ranks_begin, ranks_end] = slice(d.sites[s], "ranks", d.site_ranks.size());
    (void)ranks_begin;
    (void)ranks_end;
    for (const RankGroupSpec& g : layer_site_groups()) decode_rank_group(site, d.sites[s], g, d.site_ranks);
    sites.push_back(std::move(site));
  }
  out["collectives"] = std::move(sites);
  json checks = json::array();
  const auto [checks_begin, checks_end] = slice(row, "checks", d.checks.size());
  for (std::size_t c = checks_begin; c < checks_end; ++c) {
    json check = json::object();
    decode_scalars(check, d.checks[c], layer_check_scalars());
    checks.push_back(std::move(check));
  }
  out["checks"] = std::move(checks);
  return out;
}

}  // namespace collscope::results
