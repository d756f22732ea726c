#include "collscope/results/results_file.hpp"

#include <map>
#include <optional>
#include <utility>

#include "collscope/build_config.hpp"
#include "collscope/errors.hpp"
#include "collscope/results/build_info.hpp"
#include "eoa_guard.hpp"
#include "file_io.hpp"
#include "layer.hpp"
#include "rows.hpp"
#include "runs.hpp"
#include "utc_time.hpp"

namespace collscope::results {

// One table of rows with its ranks table and pools.
struct OpenTable {
  const TableSpec* spec = nullptr;
  h5::Id rows, ranks;
  std::map<std::string, h5::Id> pools;
  hsize_t next_row = 0;  // rows past the last finished one are overwritten
};

// /layer: the rows table and its children.
struct LayerTables {
  OpenTable table;
  h5::Id sites, site_ranks, checks;
};

struct ResultsFile::Impl {
  std::string path;
  h5::Id file;
  EoaGuard guard;
  h5::Id runs;
  std::int64_t run_id = -1;
  OpenTable collective, pingpong;
  std::optional<LayerTables> layer;  // none until the file has /layer

  void flush();
  void append(OpenTable& t, const nlohmann::json& row);
  void append_layer(const nlohmann::json& record);
  void close();
};

namespace {

// How many rows lead up to the last finished one (run_id >= 0): a writer killed inside
// the flush of a row that starts a new chunk can leave one with the fill value behind.
hsize_t finished_rows(hid_t dataset, const Layout& layout) {
  hsize_t n = length_of(dataset);
  while (n > 0 && read_records(dataset, layout, n - 1, 1).front().get_int("run_id") < 0) --n;
  return n;
}

// The GPU records of runs before `runs`: later ones are a crashed run's, overwritten.
hsize_t finished_gpus(hid_t dataset, hsize_t runs) {
  hsize_t n = length_of(dataset);
  while (n > 0) {
    const std::int64_t id = read_records(dataset, run_gpus_layout(), n - 1, 1).front().get_int("run_id");
    if (id >= 0 && static_cast<hsize_t>(id) < runs) break;
    --n;
  }
  return n;
}

// Ranks past the last finished row belong to no row: their `row` becomes -1, so that a
// row appended later at that index cannot be confused with them.
void orphan_unreferenced_ranks(OpenTable& t) {
  hsize_t end = 0;
  if (t.next_row > 0) {
    const Record last = read_records(t.rows.get(), t.spec->rows, t.next_row - 1, 1).front();
    end = static_cast<hsize_t>(last.get_int("ranks_offset") + last.get_int("ranks_count"));
  }
  const hsize_t length = length_of(t.ranks.get());
  if (end >= length) return;
  std::vector<Record> orphans = read_records(t.ranks.get(), t.spec->ranks, end, length - end);
  for (Record& r : orphans) r.set_int("row", -1);
  write_records(t.ranks.get(), orphans, end);
}

OpenTable open_table(hid_t file, const TableSpec& spec) {
  OpenTable t;
  t.spec = &spec;
  t.rows = open_dataset(file, dataset_path(spec, "rows"));
  t.ranks = open_dataset(file, dataset_path(spec, "ranks"));
  for (const PoolSpec& p : spec.pools) t.pools[p.key] = open_dataset(file, dataset_path(spec, p.key));
  t.next_row = finished_rows(t.rows.get(), spec.rows);
  orphan_unreferenced_ranks(t);
  return t;
}

// Marks the records of `dataset` from `end` on as belonging to nothing (`marker` -1).
void orphan_from(hid_t dataset, const Layout& layout, const char* marker, hsize_t end) {
  const hsize_t length = length_of(dataset);
  if (end >= length) return;
  std::vector<Record> orphans = read_records(dataset, layout, end, length - end);
  for (Record& r : orphans) r.set_int(marker, -1);
  write_records(dataset, orphans, end);
}

// Where the children of the last finished layer row end; what follows belongs to no row.
LayerTables open_layer(hid_t file) {
  LayerTables l{open_table(file, layer_table()), open_dataset(file, layer_path("sites")),
                open_dataset(file, layer_path("site_ranks")), open_dataset(file, layer_path("checks"))};
  hsize_t sites_end = 0, checks_end = 0, site_ranks_end = 0;
  if (l.table.next_row > 0) {
    const Record last = read_records(l.table.rows.get(), layer_table().rows, l.table.next_row - 1, 1).front();
    sites_end = static_cast<hsize_t>(last.get_int("sites_offset") + last.get_int("sites_count"));
    checks_end = static_cast<hsize_t>(last.get_int("checks_offset") + last.get_int("checks_count"));
  }
  if (sites_end > 0) {
    const Record site = read_records(l.sites.get(), layer_sites_layout(), sites_end - 1, 1).front();
    site_ranks_end = static_cast<hsize_t>(site.get_int("ranks_offset") + site.get_int("ranks_count"));
  }
  orphan_from(l.sites.get(), layer_sites_layout(), "row", sites_end);
  orphan_from(l.checks.get(), layer_checks_layout(), "row", checks_end);
  orphan_from(l.site_ranks.get(), layer_site_ranks_layout(), "site", site_ranks_end);
  return l;
}

void append_pool(OpenTable& t, PoolValues& v, Record& row) {
  const std::string key = v.pool->key;
  if (!v.present) {
    row.set_int(key + "_offset", -1);
    row.set_int(key + "_count", 0);
    return;
  }
  const hid_t dataset = t.pools.at(key).get();
  const hsize_t at = length_of(dataset);
  const void* data = v.pool->kind == Kind::u64 ? static_cast<const void*>(v.u64.data()) : v.f64.data();
  write_at(dataset, memtype_of(v.pool->kind), data, at, v.size());
  row.set_int(key + "_offset", static_cast<std::int64_t>(at));
  row.set_int(key + "_count", static_cast<std::int64_t>(v.size()));
}

FileAttributes new_file_attributes() {
  return {kSchemaVersion, std::string("collscope ") + COLLSCOPE_VERSION + " (" + COLLSCOPE_GIT_REVISION + ")",
          utc_now()};
}

}  // namespace

void ResultsFile::Impl::flush() {
  h5::check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "cannot flush the results file '" + path + "'");
}

// Children first (ranks, pools), flushed; then the row that points at them, flushed: a
// kill at any moment leaves either the row with everything it refers to, or no row.
void ResultsFile::Impl::append(OpenTable& t, const nlohmann::json& json_row) {
  EncodedRow e = encode_row(*t.spec, json_row);
  const hsize_t ranks_at = length_of(t.ranks.get());
  for (Record& r : e.ranks) r.set_int("row", static_cast<std::int64_t>(t.next_row));
  e.row.set_int("ranks_offset", static_cast<std::int64_t>(ranks_at));
  e.row.set_int("ranks_count", static_cast<std::int64_t>(e.ranks.size()));
  e.row.set_int("run_id", run_id);
  guard.reserve(e.payload_bytes());
  write_records(t.ranks.get(), e.ranks, ranks_at);
  for (PoolValues& v : e.pools) append_pool(t, v, e.row);
  flush();
  guard.reserve(e.payload_bytes());
  write_records(t.rows.get(), {e.row}, t.next_row);
  flush();
  ++t.next_row;
}

// As append(): every child (ranks, times, sites with their ranks, checks) flushed first,
// then the row. A file without /layer gets it here, in one flush of its own before the
// row (SCHEMA.md, "/layer": the one step that is not crash safe).
void ResultsFile::Impl::append_layer(const nlohmann::json& record) {
  EncodedLayer e = encode_layer(record);
  if (!layer) {
    guard.reserve(0);
    create_layer_group(file.get());
    flush();
    layer = open_layer(file.get());
  }
  OpenTable& t = layer->table;
  const auto row = static_cast<std::int64_t>(t.next_row);
  const hsize_t ranks_at = length_of(t.ranks.get()), sites_at = length_of(layer->sites.get()),
                site_ranks_at = length_of(layer->site_ranks.get()), checks_at = length_of(layer->checks.get());
  for (Record& r : e.row.ranks) r.set_int("row", row);
  for (Record& r : e.sites) {
    r.set_int("row", row);
    r.set_int("ranks_offset", r.get_int("ranks_offset") + static_cast<std::int64_t>(site_ranks_at));
  }
  for (Record& r : e.site_ranks) r.set_int("site", r.get_int("site") + static_cast<std::int64_t>(sites_at));
  for (Record& r : e.checks) r.set_int("row", row);
  e.row.row.set_int("ranks_offset", static_cast<std::int64_t>(ranks_at));
  e.row.row.set_int("ranks_count", static_cast<std::int64_t>(e.row.ranks.size()));
  e.row.row.set_int("sites_offset", static_cast<std::int64_t>(sites_at));
  e.row.row.set_int("checks_offset", static_cast<std::int64_t>(checks_at));
  e.row.row.set_int("run_id", run_id);
  guard.reserve(e.payload_bytes());
  write_records(t.ranks.get(), e.row.ranks, ranks_at);
  for (PoolValues& v : e.row.pools) append_pool(t, v, e.row.row);
  write_records(layer->site_ranks.get(), e.site_ranks, site_ranks_at);
  write_records(layer->sites.get(), e.sites, sites_at);
  write_records(layer->checks.get(), e.checks, checks_at);
  flush();
  guard.reserve(e.payload_bytes());
  write_records(t.rows.get(), {e.row.row}, t.next_row);
  flush();
  ++t.next_row;
}

void ResultsFile::Impl::close() {
  if (!file.valid()) return;
  flush();
  guard.release();
  runs.reset();
  collective = {};
  pingpong = {};
  layer.reset();
  h5::check(H5Fclose(file.release()), "cannot close the results file '" + path + "'");
  guard.trim();
}

ResultsFile ResultsFile::open_for_append(const std::string& path, const RunAttributes& run) {
  h5::QuietErrors quiet;
  create_results_file(path, new_file_attributes());
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->file = open_results_file(path, true);
  impl->guard = EoaGuard(path, impl->file.get());
  impl->guard.reserve(0);
  impl->runs = open_dataset(impl->file.get(), "/runs");
  impl->collective = open_table(impl->file.get(), collective_table());
  impl->pingpong = open_table(impl->file.get(), pingpong_table());
  if (has_layer_group(impl->file.get())) impl->layer = open_layer(impl->file.get());
  impl->flush();
  impl->guard.reserve(0);
  const hsize_t run_at = finished_rows(impl->runs.get(), runs_layout());
  impl->run_id = static_cast<std::int64_t>(run_at);
  // The run's GPUs first, then the run: a crash between them leaves GPU records of a run
  // that does not exist, which the next run's GPU records overwrite.
  h5::Id gpus = open_dataset(impl->file.get(), "/run_gpus");
  const hsize_t gpus_at = finished_gpus(gpus.get(), run_at);
  orphan_from(gpus.get(), run_gpus_layout(), "run_id", gpus_at);
  if (!run.gpus.empty()) write_records(gpus.get(), encode_run_gpus(run, impl->run_id), gpus_at);
  write_records(impl->runs.get(), {encode_run(run, impl->run_id)}, run_at);
  impl->flush();
  return ResultsFile(std::move(impl));
}

ResultsFile::ResultsFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ResultsFile::ResultsFile(ResultsFile&&) noexcept = default;
ResultsFile& ResultsFile::operator=(ResultsFile&&) noexcept = default;

ResultsFile::~ResultsFile() {
  try {
    close();
  } catch (...) {  // a destructor reports nothing; close() explicitly to see errors
  }
}

void ResultsFile::append_collective(const nlohmann::json& row) {
  h5::QuietErrors quiet;
  impl_->append(impl_->collective, row);
}

void ResultsFile::append_pingpong(const nlohmann::json& row) {
  h5::QuietErrors quiet;
  impl_->append(impl_->pingpong, row);
}

void ResultsFile::append_layer(const nlohmann::json& record) {
  h5::QuietErrors quiet;
  impl_->append_layer(record);
}

std::int64_t ResultsFile::run_id() const { return impl_->run_id; }
const std::string& ResultsFile::path() const { return impl_->path; }

void ResultsFile::close() {
  if (!impl_) return;
  h5::QuietErrors quiet;
  impl_->close();
}

std::unique_ptr<ResultsFile> open_results_on_root(const std::string& path, const RunAttributes& run,
                                                  MPI_Comm comm) {
  if (path.empty()) return nullptr;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::unique_ptr<ResultsFile> file;
  int kind = 0;  // 0 ok, 1 usage, 2 runtime
  std::string message;
  if (rank == 0) {
    try {
      file = std::make_unique<ResultsFile>(ResultsFile::open_for_append(path, run));
    } catch (const UsageError& e) {
      kind = 1;
      message = e.what();
    } catch (const std::exception& e) {
      kind = 2;
      message = e.what();
    }
  }
  int header[2] = {kind, static_cast<int>(message.size())};
  MPI_Bcast(header, 2, MPI_INT, 0, comm);
  message.resize(static_cast<std::size_t>(header[1]));
  MPI_Bcast(message.data(), header[1], MPI_CHAR, 0, comm);
  if (header[0] == 1) throw UsageError(message);
  if (header[0] == 2) throw RuntimeErrorOnAllRanks(message);
  return file;
}

}  // namespace collscope::results
