// Creating, opening and checking results files, and the dataset operations both the
// writer and the reader use.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "h5.hpp"
#include "record.hpp"
#include "schema.hpp"

namespace collscope::results {

struct FileAttributes {
  int schema_version = 0;
  std::string created_by, created_utc;
};

// Creates an empty results file at `path` unless something exists there (returns false
// then). Built as path.tmp.<pid> and linked into place, so `path` is never half made.
bool create_results_file(const std::string& path, const FileAttributes& attrs);

// Opens and checks an existing file: UsageError when it is not a results file of this
// schema version, RuntimeError when it cannot be read (or, writable, written).
h5::Id open_results_file(const std::string& path, bool writable);

FileAttributes read_file_attributes(hid_t file);

// The /layer group: every new file has it; one made before it existed gets it on its
// first layer row (create_layer_group, in the open file; SCHEMA.md, "/layer").
bool has_layer_group(hid_t file);
void create_layer_group(hid_t file);
std::string layer_path(const std::string& name);  // /layer/<name>

std::string dataset_path(const TableSpec& t, const std::string& name);  // "/collective/rows"
h5::Id open_dataset(hid_t file, const std::string& path);

hsize_t length_of(hid_t dataset);
// Writes n elements at `at`, extending the dataset when they pass its end.
void write_at(hid_t dataset, hid_t memtype, const void* data, hsize_t at, hsize_t n);
void read_range(hid_t dataset, hid_t memtype, void* out, hsize_t at, hsize_t n);

std::vector<Record> read_records(hid_t dataset, const Layout& layout, hsize_t at, hsize_t n);
void write_records(hid_t dataset, const std::vector<Record>& records, hsize_t at);

hid_t memtype_of(Kind pool_kind);  // NATIVE_UINT64 or NATIVE_DOUBLE

}  // namespace collscope::results
