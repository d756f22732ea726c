// A fixed-size record (one row of an HDF5 compound table) and its layout: named fields
// packed in order, with the matching HDF5 compound type. results/SCHEMA.md lists them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "h5.hpp"

namespace collscope::results {

enum class Kind { i32, i64, u64, f64, boolean, text };

struct Field {
  std::string name;
  Kind kind = Kind::i64;
  std::size_t text_size = 0;  // text: bytes including the terminating NUL
  std::size_t offset = 0;     // set by Layout
};

class Layout {
 public:
  explicit Layout(std::vector<Field> fields);
  std::size_t size() const { return size_; }
  const std::vector<Field>& fields() const { return fields_; }
  const Field& field(std::string_view name) const;  // throws std::logic_error if unknown
  hid_t type() const { return type_.get(); }          // the compound type, file and memory

 private:
  std::vector<Field> fields_;
  std::size_t size_ = 0;
  h5::Id type_;
};

// One record's bytes. Setters check the field's kind; text longer than the field is cut
// at a UTF-8 boundary and ends in "..." (documented in SCHEMA.md).
class Record {
 public:
  explicit Record(const Layout& layout);
  const Layout& layout() const { return *layout_; }
  const std::byte* data() const { return bytes_.data(); }
  std::byte* data() { return bytes_.data(); }

  void set_int(std::string_view name, std::int64_t v);  // i32 or i64
  void set_u64(std::string_view name, std::uint64_t v);
  void set_f64(std::string_view name, double v);
  void set_bool(std::string_view name, bool v);
  void set_text(std::string_view name, std::string_view v);

  std::int64_t get_int(std::string_view name) const;
  std::uint64_t get_u64(std::string_view name) const;
  double get_f64(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  std::string get_text(std::string_view name) const;

 private:
  const Field& at(std::string_view name, Kind kind) const;
  const Layout* layout_;
  std::vector<std::byte> bytes_;
};

// The records of a table side by side, as one H5Dwrite / H5Dread buffer.
std::vector<std::byte> pack(const std::vector<Record>& records);

}  // namespace collscope::results
