// Row-major 2-D tensors: Tensor (float32 compute values) for the sharded layers and
// RefTensor (float64) for the unsharded reference. Layers with more dimensions flatten
// them into rows ([S, B, H] -> [S x B, H]) or into column blocks (heads).
//
// Storage dtype. A layer computes in float32 and *stores* in float32 or bfloat16. With
// bfloat16 storage every value that a bfloat16 training run would keep in memory is
// rounded to bfloat16 (round to nearest even, collscope::to_bfloat16) when it is stored:
// generated inputs and weights, every op's output (GEMM results, activations, gradients),
// and every buffer a collective moves, which travels as 2-byte bfloat16 elements and is
// reduced by the collective's reducer in bfloat16 (widened to float, rounded once per
// reduction step). Inside one op the arithmetic stays float32 (a GEMM accumulates its K
// products in float32, as tensor cores do), and the op's result is rounded once. A
// Tensor always holds floats; under bfloat16 storage they are bfloat16 values.
#pragma once

#include <cstddef>
#include <vector>

#include "collscope/types.hpp"

namespace collscope::layers {

template <class T>
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<T> data;

  Matrix() = default;
  Matrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c, T{}) {}
  T& at(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  const T& at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
  std::size_t size() const { return data.size(); }
  bool same_shape(const auto& o) const { return rows == o.rows && cols == o.cols; }
};

using Tensor = Matrix<float>;
using RefTensor = Matrix<double>;

// Storage: float32 or bfloat16 (the only dtypes a layer takes).
bool is_storage_dtype(DataType t);
float store_value(float v, DataType storage);  // v as `storage` keeps it
void round_to_storage(Tensor& t, DataType storage);

RefTensor to_ref(const Tensor& t);

// Blocks and concatenation (the shards of a tensor split by rows or by columns).
template <class T>
Matrix<T> column_block(const Matrix<T>& m, std::size_t first, std::size_t count) {
  Matrix<T> out(m.rows, count);
  for (std::size_t r = 0; r < m.rows; ++r)
    for (std::size_t c = 0; c < count; ++c) out.at(r, c) = m.at(r, first + c);
  return out;
}

template <class T>
Matrix<T> row_block(const Matrix<T>& m, std::size_t first, std::size_t count) {
  Matrix<T> out(count, m.cols);
  for (std::size_t r = 0; r < count; ++r)
    for (std::size_t c = 0; c < m.cols; ++c) out.at(r, c) = m.at(first + r, c);
  return out;
}

// Side by side: all parts have the same number of rows.
template <class T>
Matrix<T> concat_columns(const std::vector<Matrix<T>>& parts) {
  std::size_t cols = 0;
  for (const Matrix<T>& p : parts) cols += p.cols;
  Matrix<T> out(parts.empty() ? 0 : parts[0].rows, cols);
  std::size_t offset = 0;
  for (const Matrix<T>& p : parts) {
    for (std::size_t r = 0; r < p.rows; ++r)
      for (std::size_t c = 0; c < p.cols; ++c) out.at(r, offset + c) = p.at(r, c);
    offset += p.cols;
  }
  return out;
}

// One above the other: all parts have the same number of columns.
template <class T>
Matrix<T> concat_rows(const std::vector<Matrix<T>>& parts) {
  Matrix<T> out;
  out.cols = parts.empty() ? 0 : parts[0].cols;
  for (const Matrix<T>& p : parts) {
    out.data.insert(out.data.end(), p.data.begin(), p.data.end());
    out.rows += p.rows;
  }
  return out;
}

}  // namespace collscope::layers
