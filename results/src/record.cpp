#include "record.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace collscope::results {
namespace {

std::size_t size_of(const Field& f) {
  switch (f.kind) {
    case Kind::i32: return 4;
    case Kind::boolean: return 1;
    case Kind::text: return f.text_size;
    default: return 8;
  }
}

// HDF5's boolean as h5py spells it: an int8 enum FALSE = 0, TRUE = 1 (numpy bool).
h5::Id bool_type() {
  h5::Id t = h5::own(H5Tenum_create(H5T_NATIVE_INT8), "enum type");
  const signed char no = 0, yes = 1;
  H5Tenum_insert(t.get(), "FALSE", &no);
  H5Tenum_insert(t.get(), "TRUE", &yes);
  return t;
}

h5::Id text_type(std::size_t size) {
  h5::Id t = h5::own(H5Tcopy(H5T_C_S1), "string type");
  H5Tset_size(t.get(), size);
  H5Tset_strpad(t.get(), H5T_STR_NULLTERM);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

h5::Id member_type(const Field& f) {
  switch (f.kind) {
    case Kind::i32: return h5::own(H5Tcopy(H5T_NATIVE_INT32), "type");
    case Kind::i64: return h5::own(H5Tcopy(H5T_NATIVE_INT64), "type");
    case Kind::u64: return h5::own(H5Tcopy(H5T_NATIVE_UINT64), "type");
    case Kind::f64: return h5::own(H5Tcopy(H5T_NATIVE_DOUBLE), "type");
    case Kind::boolean: return bool_type();
    case Kind::text: return text_type(f.text_size);
  }
  throw std::logic_error("unknown field kind");
}

// The longest prefix of `s` that fits `room` bytes, not splitting a UTF-8 sequence.
std::size_t utf8_prefix(std::string_view s, std::size_t room) {
  std::size_t n = std::min(room, s.size());
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

Layout::Layout(std::vector<Field> fields) : fields_(std::move(fields)) {
  for (Field& f : fields_) {
    f.offset = size_;
    size_ += size_of(f);
  }
  type_ = h5::own(H5Tcreate(H5T_COMPOUND, size_), "compound type");
  for (const Field& f : fields_)
    H5Tinsert(type_.get(), f.name.c_str(), f.offset, member_type(f).get());
}

const Field& Layout::field(std::string_view name) const {
  for (const Field& f : fields_)
    if (f.name == name) return f;
  throw std::logic_error("no field '" + std::string(name) + "' in this table");
}

Record::Record(const Layout& layout) : layout_(&layout), bytes_(layout.size()) {}

const Field& Record::at(std::string_view name, Kind kind) const {
  const Field& f = layout_->field(name);
  if (f.kind != kind && !(kind == Kind::i64 && f.kind == Kind::i32))
    throw std::logic_error("field '" + std::string(name) + "' has another kind");
  return f;
}

void Record::set_int(std::string_view name, std::int64_t v) {
  const Field& f = at(name, Kind::i64);
  if (f.kind == Kind::i32) {
    const auto v32 = static_cast<std::int32_t>(v);
    std::memcpy(bytes_.data() + f.offset, &v32, 4);
  } else {
    std::memcpy(bytes_.data() + f.offset, &v, 8);
  }
}

void Record::set_u64(std::string_view name, std::uint64_t v) {
  std::memcpy(bytes_.data() + at(name, Kind::u64).offset, &v, 8);
}

void Record::set_f64(std::string_view name, double v) {
  std::memcpy(bytes_.data() + at(name, Kind::f64).offset, &v, 8);
}

void Record::set_bool(std::string_view name, bool v) {
  bytes_[at(name, Kind::boolean).offset] = std::byte{v ? std::uint8_t{1} : std::uint8_t{0}};
}

void Record::set_text(std::string_view name, std::string_view v) {
  const Field& f = at(name, Kind::text);
  std::byte* out = bytes_.data() + f.offset;
  std::memset(out, 0, f.text_size);
  const std::size_t room = f.text_size - 1;
  if (v.size() <= room) {
    std::memcpy(out, v.data(), v.size());
    return;
  }
  const std::size_t keep = utf8_prefix(v, room - 3);
  std::memcpy(out, v.data(), keep);
  std::memcpy(out + keep, "...", 3);
}

std::int64_t Record::get_int(std::string_view name) const {
  const Field& f = at(name, Kind::i64);
  if (f.kind == Kind::i32) {
    std::int32_t v32;
    std::memcpy(&v32, bytes_.data() + f.offset, 4);
    return v32;
  }
  std::int64_t v;
  std::memcpy(&v, bytes_.data() + f.offset, 8);
  return v;
}

std::uint64_t Record::get_u64(std::string_view name) const {
  std::uint64_t v;
  std::memcpy(&v, bytes_.data() + at(name, Kind::u64).offset, 8);
  return v;
}

double Record::get_f64(std::string_view name) const {
  double v;
  std::memcpy(&v, bytes_.data() + at(name, Kind::f64).offset, 8);
  return v;
}

bool Record::get_bool(std::string_view name) const {
  return bytes_[at(name, Kind::boolean).offset] != std::byte{0};
}

std::string Record::get_text(std::string_view name) const {
  const Field& f = at(name, Kind::text);
  const char* p = reinterpret_cast<const char*>(bytes_.data() + f.offset);
  return std::string(p, strnlen(p, f.text_size));
}

std::vector<std::byte> pack(const std::vector<Record>& records) {
  std::vector<std::byte> out;
  for (const Record& r : records) out.insert(out.end(), r.data(), r.data() + r.layout().size());
  return out;
}

}  // namespace collscope::results
