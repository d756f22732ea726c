// Thin RAII over HDF5 ids and its error stack: one-line messages instead of printed stacks.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

namespace collscope::results::h5 {

// Owns one HDF5 id (file, group, dataset, type, space, property list, attribute).
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Id& operator=(Id&& other) noexcept;
  ~Id() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }  // the caller closes it
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// While alive, HDF5 prints nothing on errors (our callers report one line instead).
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The innermost message of HDF5's current error stack ("" if it is empty).
std::string error_message();

// Throws collscope::RuntimeError("<what>: <HDF5's message>") when `status` is negative.
hid_t check(hid_t status, const std::string& what);
Id own(hid_t id, const std::string& what);  // check(), then owned

}  // namespace collscope::results::h5
