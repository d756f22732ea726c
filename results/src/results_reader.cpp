#include "collscope/results/results_reader.hpp"

#include "file_io.hpp"
#include "layer.hpp"
#include "rows.hpp"
#include "runs.hpp"

namespace collscope::results {
namespace {

std::vector<Record> read_all(hid_t file, const std::string& path, const Layout& layout) {
  h5::Id dataset = open_dataset(file, path);
  return read_records(dataset.get(), layout, 0, length_of(dataset.get()));
}

template <class T>
std::vector<T> read_pool(hid_t file, const std::string& path, hid_t memtype) {
  h5::Id dataset = open_dataset(file, path);
  std::vector<T> out(length_of(dataset.get()));
  read_range(dataset.get(), memtype, out.data(), 0, out.size());
  return out;
}

TableData read_table(hid_t file, const TableSpec& t) {
  TableData d;
  d.rows = read_all(file, dataset_path(t, "rows"), t.rows);
  d.ranks = read_all(file, dataset_path(t, "ranks"), t.ranks);
  for (const PoolSpec& p : t.pools) {
    const std::string path = dataset_path(t, p.key);
    if (p.kind == Kind::u64) d.u64_pools[p.key] = read_pool<std::uint64_t>(file, path, memtype_of(p.kind));
    else d.f64_pools[p.key] = read_pool<double>(file, path, memtype_of(p.kind));
  }
  return d;
}

// The rows of a table, with version 1's names renamed to this version's.
std::vector<StoredRow> stored_rows(hid_t file, const TableSpec& t, int version) {
  const TableData d = read_table(file, t);
  std::vector<StoredRow> out;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    const std::int64_t run_id = d.rows[i].get_int("run_id");
    if (run_id < 0) continue;
    nlohmann::json row = decode_row(t, d, i);
    out.push_back({run_id, version == 1 ? rename_version1_fields(std::move(row)) : std::move(row)});
  }
  return out;
}

std::vector<StoredRow> stored_layer_rows(hid_t file, int version) {
  if (!has_layer_group(file)) return {};
  LayerData d;
  d.table = read_table(file, layer_table(version));
  d.sites = read_all(file, layer_path("sites"), layer_sites_layout(version));
  d.site_ranks = read_all(file, layer_path("site_ranks"), layer_site_ranks_layout());
  d.checks = read_all(file, layer_path("checks"), layer_checks_layout());
  std::vector<StoredRow> out;
  for (std::size_t i = 0; i < d.table.rows.size(); ++i) {
    const std::int64_t run_id = d.table.rows[i].get_int("run_id");
    if (run_id >= 0) out.push_back({run_id, decode_layer(d, i, version)});
  }
  return out;
}

}  // namespace

ResultsContents read_results(const std::string& path) {
  h5::QuietErrors quiet;
  h5::Id file = open_results_file(path, false);
  ResultsContents c;
  const FileAttributes attrs = read_file_attributes(file.get());
  c.schema_version = attrs.schema_version;
  c.created_by = attrs.created_by;
  c.created_utc = attrs.created_utc;
  const int v = attrs.schema_version;
  for (const Record& r : read_all(file.get(), "/runs", runs_layout(v)))
    if (r.get_int("run_id") >= 0) c.runs.push_back({r.get_int("run_id"), decode_run(r)});
  if (v >= 2)
    for (const Record& r : read_all(file.get(), "/run_gpus", run_gpus_layout(v)))
      for (auto& run : c.runs)
        if (run.run_id == r.get_int("run_id")) run.attributes.gpus.push_back(decode_run_gpu(r));
  c.collective = stored_rows(file.get(), collective_table(v), v);
  c.pingpong = stored_rows(file.get(), pingpong_table(v), v);
  c.layer = stored_layer_rows(file.get(), v);
  return c;
}

}  // namespace collscope::results
