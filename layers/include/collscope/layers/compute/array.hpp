// Array: a rows x cols row-major array of one element type in an engine's memory (host
// memory, or a GPU's behind the device runtime). The sharded layers keep every
// parameter, activation and gradient in Arrays, so one pipeline runs on either memory.
//
// Elements are stored as their dtype: a bfloat16 array holds 2-byte bfloat16 values (on
// the host too: a float32 compute value is rounded once when an op stores it, as
// tensor.hpp's storage rule says), float32 holds floats; int32, int64 and uint8 hold
// indices, counts and flags. An Array owns its memory (move-only; clone() copies on the
// engine's stream) and returns it to the engine when destroyed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/types.hpp"

namespace collscope::layers {

class Engine;

class Array {
 public:
  Array() = default;
  // Uninitialised memory; zeros() / Engine ops fill it.
  Array(Engine& engine, std::size_t rows, std::size_t cols, DataType dtype);
  ~Array() { reset(); }
  Array(Array&& o) noexcept { take(o); }
  Array& operator=(Array&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t size() const { return rows_ * cols_; }
  std::size_t bytes() const { return size() * dtype_size(dtype_); }
  DataType dtype() const { return dtype_; }
  bool empty() const { return size() == 0; }
  bool same_shape(const Array& o) const { return rows_ == o.rows_ && cols_ == o.cols_; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }
  // The address of element (r, c).
  std::byte* at(std::size_t r, std::size_t c = 0) {
    return static_cast<std::byte*>(data_) + (r * cols_ + c) * dtype_size(dtype_);
  }
  const std::byte* at(std::size_t r, std::size_t c = 0) const {
    return static_cast<const std::byte*>(data_) + (r * cols_ + c) * dtype_size(dtype_);
  }
  Engine& engine() const { return *engine_; }
  bool has_engine() const { return engine_ != nullptr; }

  void reset();

 private:
  void take(Array& o) {
    engine_ = o.engine_, data_ = o.data_, rows_ = o.rows_, cols_ = o.cols_, dtype_ = o.dtype_;
    o.engine_ = nullptr, o.data_ = nullptr, o.rows_ = o.cols_ = 0;
  }

  Engine* engine_ = nullptr;
  void* data_ = nullptr;
  std::size_t rows_ = 0, cols_ = 0;
  DataType dtype_ = DataType::float32;
};

}  // namespace collscope::layers
