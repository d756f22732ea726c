#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "collscope/errors.hpp"
#include "collscope/results/results_file.hpp"

namespace collscope::results {
namespace {

// Old on-disk structures only (superblock 0/1, no status flags that a killed writer
// would leave set), no raw-data chunk cache (rows reach the file at H5Dwrite), and file
// locking that steps aside on file systems without it.
h5::Id access_plist() {
  h5::Id fapl = h5::own(H5Pcreate(H5P_FILE_ACCESS), "property list");
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
  H5Pset_cache(fapl.get(), 0, 521, 0, 1.0);
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl.get(), true, true);
#endif
  return fapl;
}

// Chunk indexes with up to 512 entries per node: splits (the one flush that is not
// crash safe, SCHEMA.md) are rare.
h5::Id creation_plist() {
  h5::Id fcpl = h5::own(H5Pcreate(H5P_FILE_CREATE), "property list");
  H5Pset_istore_k(fcpl.get(), 256);
  return fcpl;
}

void write_text_attribute(hid_t at, const char* name, const std::string& value) {
  h5::Id type = h5::own(H5Tcopy(H5T_C_S1), "string type");
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  h5::Id space = h5::own(H5Screate(H5S_SCALAR), "dataspace");
  h5::Id attr = h5::own(H5Acreate2(at, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), name);
  const char* p = value.c_str();
  h5::check(H5Awrite(attr.get(), type.get(), &p), name);
}

void write_int_attribute(hid_t at, const char* name, int value) {
  h5::Id space = h5::own(H5Screate(H5S_SCALAR), "dataspace");
  h5::Id attr = h5::own(H5Acreate2(at, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), name);
  h5::check(H5Awrite(attr.get(), H5T_NATIVE_INT, &value), name);
}

// The chunk index (a v1 B-tree) is made when the first chunk is written: done here, in
// the new file, by writing one element and cutting the dataset back to none, so that no
// append ever has to create it (a new index node is the unsafe case, SCHEMA.md).
void create_index(hid_t dataset, hid_t type) {
  const hsize_t one = 1, zero = 0;
  std::vector<std::byte> element(H5Tget_size(type));
  h5::check(H5Dset_extent(dataset, &one), "cannot extend a new table");
  h5::check(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, element.data()), "cannot write");
  h5::check(H5Dset_extent(dataset, &zero), "cannot shrink a new table");
}

void create_dataset(hid_t parent, const std::string& name, hid_t type, hsize_t chunk, const void* fill) {
  const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  h5::Id space = h5::own(H5Screate_simple(1, &zero, &unlimited), "dataspace");
  h5::Id dcpl = h5::own(H5Pcreate(H5P_DATASET_CREATE), "property list");
  H5Pset_chunk(dcpl.get(), 1, &chunk);
  H5Pset_obj_track_times(dcpl.get(), false);  // no modification times to rewrite
  if (fill) H5Pset_fill_value(dcpl.get(), type, fill);
  else H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);  // pools: only what is written
  h5::Id dataset = h5::own(
      H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      "cannot create " + name);
  create_index(dataset.get(), type);
}

// Fill value of a row table: run_id (or row) -1 marks a row no writer finished.
Record fill_record(const Layout& layout, const char* marker) {
  Record r(layout);
  r.set_int(marker, -1);
  return r;
}

h5::Id create_table(hid_t file, const TableSpec& t) {
  h5::Id group = h5::own(H5Gcreate2(file, t.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), t.name);
  create_dataset(group.get(), "rows", t.rows.type(), t.row_chunk, fill_record(t.rows, "run_id").data());
  create_dataset(group.get(), "ranks", t.ranks.type(), t.rank_chunk, fill_record(t.ranks, "row").data());
  for (const PoolSpec& p : t.pools) create_dataset(group.get(), p.key, memtype_of(p.kind), kPoolChunk, nullptr);
  return group;
}

void build_layout(const std::string& path, const FileAttributes& attrs) {
  h5::Id fcpl = creation_plist(), fapl = access_plist();
  h5::Id file = h5::own(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()),
                        "HDF5");
  write_text_attribute(file.get(), "collscope_format", kFormatName);
  write_int_attribute(file.get(), "collscope_schema_version", attrs.schema_version);
  write_text_attribute(file.get(), "created_by", attrs.created_by);
  write_text_attribute(file.get(), "created_utc", attrs.created_utc);
  create_dataset(file.get(), "runs", runs_layout().type(), kRunChunk,
                 fill_record(runs_layout(), "run_id").data());
  create_dataset(file.get(), "run_gpus", run_gpus_layout().type(), kRunGpuChunk,
                 fill_record(run_gpus_layout(), "run_id").data());
  for (const TableSpec* t : row_tables()) create_table(file.get(), *t);
  create_layer_group(file.get());
  h5::check(H5Fclose(file.release()), "cannot close the new results file");
}

[[noreturn]] void errno_error(const std::string& what) {
  throw RuntimeError(what + ": " + std::strerror(errno));
}

// Puts `tmp` at `path` unless something is there already (returns false then).
bool publish(const std::string& tmp, const std::string& path) {
  if (link(tmp.c_str(), path.c_str()) == 0) return true;
  if (errno == EEXIST) return false;
  struct stat st {};  // a file system without hard links: rename, after a last look
  if (stat(path.c_str(), &st) == 0) return false;
  if (rename(tmp.c_str(), path.c_str()) != 0) errno_error("cannot create the results file '" + path + "'");
  return true;
}

}  // namespace

void create_layer_group(hid_t file) {
  h5::Id group = create_table(file, layer_table());
  create_dataset(group.get(), "sites", layer_sites_layout().type(), kLayerChildChunk,
                 fill_record(layer_sites_layout(), "row").data());
  create_dataset(group.get(), "site_ranks", layer_site_ranks_layout().type(), layer_table().rank_chunk,
                 fill_record(layer_site_ranks_layout(), "site").data());
  create_dataset(group.get(), "checks", layer_checks_layout().type(), kLayerChildChunk,
                 fill_record(layer_checks_layout(), "row").data());
}

std::string layer_path(const std::string& name) { return dataset_path(layer_table(), name); }

hid_t memtype_of(Kind pool_kind) { return pool_kind == Kind::u64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_DOUBLE; }

bool create_results_file(const std::string& path, const FileAttributes& attrs) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) return false;
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) errno_error("cannot create the results file '" + path + "'");
  ::close(fd);
  try {
    build_layout(tmp, attrs);
  } catch (const std::exception& e) {
    unlink(tmp.c_str());
    throw RuntimeError("cannot create the results file '" + path + "': " + e.what());
  }
  try {
    const bool created = publish(tmp, path);
    unlink(tmp.c_str());
    return created;
  } catch (...) {
    unlink(tmp.c_str());
    throw;
  }
}

// ---- opening and checking ------------------------------------------------------------

namespace {

std::string read_text_attribute(hid_t at, const char* name) {
  if (H5Aexists(at, name) <= 0) return {};
  h5::Id attr = h5::own(H5Aopen(at, name, H5P_DEFAULT), name);
  h5::Id type = h5::own(H5Aget_type(attr.get()), name);
  if (H5Tget_class(type.get()) != H5T_STRING) return {};
  if (H5Tis_variable_str(type.get()) > 0) {
    char* p = nullptr;
    h5::Id mem = h5::own(H5Tcopy(H5T_C_S1), "string type");
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    h5::check(H5Aread(attr.get(), mem.get(), &p), name);
    std::string value = p ? p : "";
    H5free_memory(p);
    return value;
  }
  std::string value(H5Tget_size(type.get()), '\0');
  h5::check(H5Aread(attr.get(), type.get(), value.data()), name);
  return value.substr(0, value.find('\0'));
}

int read_int_attribute(hid_t at, const char* name) {
  if (H5Aexists(at, name) <= 0) return 0;
  h5::Id attr = h5::own(H5Aopen(at, name, H5P_DEFAULT), name);
  int value = 0;
  h5::check(H5Aread(attr.get(), H5T_NATIVE_INT, &value), name);
  return value;
}

bool dataset_matches(hid_t file, const std::string& path, hid_t type) {
  const std::size_t slash = path.rfind('/');
  if (slash > 0 && H5Lexists(file, path.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) return false;
  if (H5Lexists(file, path.c_str(), H5P_DEFAULT) <= 0) return false;
  h5::Id dataset(H5Dopen2(file, path.c_str(), H5P_DEFAULT));
  if (!dataset.valid()) return false;
  h5::Id stored(H5Dget_type(dataset.get()));
  return stored.valid() && H5Tequal(stored.get(), type) > 0;
}

// The first table that does not follow schema `version`, "" when all do.
std::string first_mismatch(hid_t file, int version) {
  if (!dataset_matches(file, "/runs", runs_layout(version).type())) return "/runs";
  if (version >= 2 && !dataset_matches(file, "/run_gpus", run_gpus_layout(version).type()))
    return "/run_gpus";
  std::vector<const TableSpec*> tables = row_tables(version);
  if (has_layer_group(file)) tables.push_back(&layer_table(version));  // optional, but whole when there
  for (const TableSpec* t : tables) {
    if (!dataset_matches(file, dataset_path(*t, "rows"), t->rows.type())) return dataset_path(*t, "rows");
    if (!dataset_matches(file, dataset_path(*t, "ranks"), t->ranks.type())) return dataset_path(*t, "ranks");
    for (const PoolSpec& p : t->pools)
      if (!dataset_matches(file, dataset_path(*t, p.key), memtype_of(p.kind))) return dataset_path(*t, p.key);
  }
  if (has_layer_group(file)) {
    const std::pair<const char*, const Layout*> children[] = {
        {"sites", &layer_sites_layout(version)}, {"site_ranks", &layer_site_ranks_layout()},
        {"checks", &layer_checks_layout()}};
    for (const auto& [name, layout] : children)
      if (!dataset_matches(file, layer_path(name), layout->type())) return layer_path(name);
  }
  return {};
}

// Reading takes every version from kOldestReadableVersion on; appending, only the one
// this build writes (a file is never a mix of versions).
void check_schema(hid_t file, const std::string& path, bool for_append) {
  if (read_text_attribute(file, "collscope_format") != kFormatName)
    throw UsageError("'" + path + "' is an HDF5 file but not a collscope results file: "
                     "refusing to use it");
  const int version = read_int_attribute(file, "collscope_schema_version");
  if (version < kOldestReadableVersion || version > kSchemaVersion)
    throw UsageError("'" + path + "' is a results file of schema version " + std::to_string(version) +
                     "; this build reads versions " + std::to_string(kOldestReadableVersion) +
                     " to " + std::to_string(kSchemaVersion) + ": use another file");
  if (for_append && version != kSchemaVersion)
    throw UsageError("'" + path + "' is a results file of schema version " + std::to_string(version) +
                     "; this build appends to version " + std::to_string(kSchemaVersion) +
                     " files only: write to a new file");
  const std::string bad = first_mismatch(file, version);
  if (!bad.empty())
    throw UsageError("'" + path + "' claims schema version " + std::to_string(version) +
                     " but " + bad + " is missing or differs: refusing to use it");
}

void check_is_hdf5(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) errno_error("cannot open the results file '" + path + "'");
  if (!S_ISREG(st.st_mode)) throw UsageError("'" + path + "' is not a regular file");
  if (access(path.c_str(), R_OK) != 0) errno_error("cannot read the results file '" + path + "'");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) h5::check(-1, "cannot read the results file '" + path + "'");
  if (is_hdf5 == 0)
    throw UsageError("'" + path + "' exists and is not an HDF5 file: refusing to overwrite it");
}

h5::Id open_file(const std::string& path, unsigned flags) {
  h5::Id fapl = access_plist();
  const hid_t id = H5Fopen(path.c_str(), flags, fapl.get());
  if (id >= 0) return h5::Id(id);
  std::string why = h5::error_message();
  H5Eclear2(H5E_DEFAULT);
  if (why.find("unable to lock file") != std::string::npos)
    why = "another process is writing it (" + why + ")";
  throw RuntimeError("cannot open the results file '" + path + "': " + why);
}

}  // namespace

h5::Id open_results_file(const std::string& path, bool writable) {
  check_is_hdf5(path);
  {
    h5::Id file = open_file(path, H5F_ACC_RDONLY);  // checked before anything may write
    check_schema(file.get(), path, writable);
    if (!writable) return file;
  }
  if (access(path.c_str(), W_OK) != 0) errno_error("cannot write the results file '" + path + "'");
  return open_file(path, H5F_ACC_RDWR);
}

FileAttributes read_file_attributes(hid_t file) {
  return {read_int_attribute(file, "collscope_schema_version"), read_text_attribute(file, "created_by"),
          read_text_attribute(file, "created_utc")};
}

bool has_layer_group(hid_t file) { return H5Lexists(file, "/layer", H5P_DEFAULT) > 0; }

std::string dataset_path(const TableSpec& t, const std::string& name) { return "/" + t.name + "/" + name; }

h5::Id open_dataset(hid_t file, const std::string& path) {
  return h5::own(H5Dopen2(file, path.c_str(), H5P_DEFAULT), "cannot open " + path);
}

// ---- dataset operations ---------------------------------------------------------------

hsize_t length_of(hid_t dataset) {
  h5::Id space = h5::own(H5Dget_space(dataset), "dataspace");
  hsize_t n = 0;
  h5::check(H5Sget_simple_extent_dims(space.get(), &n, nullptr), "dataspace");
  return n;
}

namespace {

h5::Id selection(hid_t dataset, hsize_t at, hsize_t n) {
  h5::Id space = h5::own(H5Dget_space(dataset), "dataspace");
  h5::check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &at, nullptr, &n, nullptr), "selection");
  return space;
}

}  // namespace

void write_at(hid_t dataset, hid_t memtype, const void* data, hsize_t at, hsize_t n) {
  if (n == 0) return;
  if (at + n > length_of(dataset)) {
    const hsize_t end = at + n;
    h5::check(H5Dset_extent(dataset, &end), "cannot extend a table");
  }
  h5::Id file_space = selection(dataset, at, n);
  h5::Id mem_space = h5::own(H5Screate_simple(1, &n, nullptr), "dataspace");
  h5::check(H5Dwrite(dataset, memtype, mem_space.get(), file_space.get(), H5P_DEFAULT, data),
            "cannot write to the results file");
}

void read_range(hid_t dataset, hid_t memtype, void* out, hsize_t at, hsize_t n) {
  if (n == 0) return;
  h5::Id file_space = selection(dataset, at, n);
  h5::Id mem_space = h5::own(H5Screate_simple(1, &n, nullptr), "dataspace");
  h5::check(H5Dread(dataset, memtype, mem_space.get(), file_space.get(), H5P_DEFAULT, out),
            "cannot read the results file");
}

std::vector<Record> read_records(hid_t dataset, const Layout& layout, hsize_t at, hsize_t n) {
  std::vector<std::byte> bytes(layout.size() * n);
  read_range(dataset, layout.type(), bytes.data(), at, n);
  std::vector<Record> out(n, Record(layout));
  for (hsize_t i = 0; i < n; ++i)
    std::memcpy(out[i].data(), bytes.data() + i * layout.size(), layout.size());
  return out;
}

void write_records(hid_t dataset, const std::vector<Record>& records, hsize_t at) {
  if (records.empty()) return;
  const std::vector<std::byte> bytes = pack(records);
  write_at(dataset, records.front().layout().type(), bytes.data(), at, records.size());
}

}  // namespace collscope::results
