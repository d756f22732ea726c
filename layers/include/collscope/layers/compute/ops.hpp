// The operations the layers compose, on Arrays, enqueued on their engine's compute
// stream (engine.hpp): creation and transfers, views for the GEMM, matrix products,
// element-wise math and row / column copies. Each op rounds what it stores once, to the
// dtype of its output (tensor.hpp's storage rule), so on the host engine the layers
// compute what they computed on host Tensors, value for value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collscope/layers/compute/array.hpp"
#include "collscope/layers/compute/engine.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers::ops {

// ---- creation and transfers --------------------------------------------------------------

Array zeros(Engine& e, std::size_t rows, std::size_t cols, DataType dtype);
// The tensor's values as `dtype` holds them (exact for values already rounded to it).
Array upload(Engine& e, const Tensor& t, DataType dtype);
Array upload_int32(Engine& e, const std::vector<std::int32_t>& v);
Array upload_int64(Engine& e, const std::vector<std::int64_t>& v);
// Waits for the compute stream; values as floats (int32, int64, uint8 too).
Tensor download(const Array& a);
template <class T>
std::vector<T> download_vector(const Array& a) {
  std::vector<T> out(a.size());
  a.engine().download(out.data(), a.data(), a.bytes());
  return out;
}
Array clone(const Array& a);
Array cast(const Array& a, DataType dtype);

// ---- views and products --------------------------------------------------------------------

MatView view(const Array& a);
// Rows [r0, r0 + rows) x columns [c0, c0 + cols) of a.
MatView view(const Array& a, std::size_t r0, std::size_t rows, std::size_t c0, std::size_t cols);
MatSpan span(Array& a);
MatSpan span(Array& a, std::size_t r0, std::size_t rows, std::size_t c0, std::size_t cols);

// c = op(a) op(b) (+ beta c), c already shaped.
void matmul(const Array& a, Trans ta, const Array& b, Trans tb, Array& c, float beta = 0);
Array matmul(const Array& a, Trans ta, const Array& b, Trans tb, DataType out);

// ---- element-wise ---------------------------------------------------------------------------

Array gelu(const Array& z, DataType out);
// da x gelu'(z)
Array gelu_backward(const Array& da, const Array& z, DataType out);
void scale(Array& t, float factor);  // in place
Array add(const Array& a, const Array& b, DataType out);

// ---- rows and columns -------------------------------------------------------------------------

Array rows(const Array& a, std::size_t r0, std::size_t count);
void put_rows(Array& dst, std::size_t r0, const Array& src);
Array columns(const Array& a, std::size_t c0, std::size_t count);
void put_columns(Array& dst, std::size_t c0, const Array& src);
// One above the other (same columns and dtype).
Array concat_rows(Engine& e, const std::vector<const Array*>& parts, std::size_t cols,
                  DataType dtype);

// ---- LayerNorm over the rows (math/layernorm.hpp has the formulas) ----------------------------

struct LayerNormStats {
  Array mean, rstd;  // per row, float32
};
// y = gamma xhat + beta, from x [T, H] and gamma, beta [1, H].
Array layernorm(const Array& x, const Array& gamma, const Array& beta, DataType out,
                LayerNormStats& stats);
struct LayerNormGrads {
  Array dx;             // [T, H]
  Array dgamma, dbeta;  // [1, H]: sums over the rows of x
};
LayerNormGrads layernorm_backward(const Array& x, const Array& gamma, const LayerNormStats& stats,
                                  const Array& dy, DataType out);

}  // namespace collscope::layers::ops
