// collscope_schema OUT: writes the results file's schema (schema.cpp) as JSON, so that the
// Python tools (scripts/collscope/results.py) read the facts the C++ writer owns instead of
// repeating them: the version written and the versions read, every table's columns with
// their kinds and missing markers, its pools and per-rank columns, the /layer datasets,
// and the catalogue's vendor baselines (collscope/algorithms.def). The build runs it into
// build/share/collscope/schema.json, beside algorithms.json.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "schema.hpp"

namespace collscope::results {
namespace {

constexpr const char* kKindNames[] = {"i32", "i64", "u64", "f64", "bool", "text"};  // Kind order
constexpr const char* kMissingNames[] = {"never", "null", "absent"};              // Missing order

nlohmann::json columns(const Layout& layout) {
  nlohmann::json out = nlohmann::json::array();
  for (const Field& f : layout.fields())
    out.push_back({{"name", f.name}, {"kind", kKindNames[static_cast<int>(f.kind)]}});
  return out;
}

// A table's JSON keys that may carry no value, by how the column stores "none".
nlohmann::json missing(const TableSpec& t) {
  nlohmann::json out = nlohmann::json::object();
  for (const ScalarSpec& s : t.scalars)
    if (s.missing != Missing::never)
      out[s.key] = {{"kind", kKindNames[static_cast<int>(s.kind)]},
                    {"missing", kMissingNames[static_cast<int>(s.missing)]}};
  for (const PairSpec& p : t.pairs)
    if (p.missing != Missing::never)
      out[p.key] = {{"kind", "pair"}, {"missing", kMissingNames[static_cast<int>(p.missing)]}};
  return out;
}

nlohmann::json table(const TableSpec& t) {
  nlohmann::json pools = nlohmann::json::array();
  for (const PoolSpec& p : t.pools) pools.push_back(p.key);
  return {{"rows", columns(t.rows)}, {"ranks", columns(t.ranks)}, {"pools", pools},
          {"missing", missing(t)}, {"children", t.children}};
}

nlohmann::json version_schema(int v) {
  nlohmann::json tables = nlohmann::json::object();
  for (const TableSpec* t : row_tables(v)) tables[t->name] = table(*t);
  nlohmann::json j{{"tables", tables}, {"runs", columns(runs_layout(v))}};
  if (v >= 2) j["run_gpus"] = columns(run_gpus_layout(v));
  j["layer"] = table(layer_table(v));
  j["layer"]["sites"] = columns(layer_sites_layout(v));
  j["layer"]["checks"] = columns(layer_checks_layout());
  return j;
}

nlohmann::json vendor_algorithms() {
  nlohmann::json out = nlohmann::json::array();
#define COLLSCOPE_ALGORITHM(collective, name, ...)
#define COLLSCOPE_VENDOR(collective, name, ...) \
  if (std::find(out.begin(), out.end(), #name) == out.end()) out.push_back(#name);
#define COLLSCOPE_P2P(name, ...)
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR
#undef COLLSCOPE_P2P
  return out;
}

nlohmann::json renames(std::string_view group) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [old_name, new_name] : version1_renames(group)) out[old_name] = new_name;
  return out;
}

nlohmann::json schema() {
  nlohmann::json versions = nlohmann::json::object();
  nlohmann::json readable = nlohmann::json::array();
  for (int v = kOldestReadableVersion; v <= kSchemaVersion; ++v) {
    readable.push_back(v);
    versions[std::to_string(v)] = version_schema(v);
  }
  return {{"format", kFormatName}, {"version", kSchemaVersion}, {"readable_versions", readable},
          {"vendor_algorithms", vendor_algorithms()}, {"versions", versions},
          {"version1_renames", {{"collective", renames("collective")}, {"layer", renames("layer")}}}};
}

}  // namespace
}  // namespace collscope::results

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: collscope_schema OUT.json\n");
    return 2;
  }
  const std::string out = argv[1], part = out + ".part";
  {
    std::ofstream f(part);
    f << collscope::results::schema().dump(1) << "\n";
    if (!f) {
      std::fprintf(stderr, "collscope_schema: error: cannot write %s\n", part.c_str());
      return 3;
    }
  }
  if (std::rename(part.c_str(), out.c_str()) != 0) {
    std::fprintf(stderr, "collscope_schema: error: cannot rename %s\n", part.c_str());
    return 3;
  }
  return 0;
}
