#include "collscope/layers/compute/ops.hpp"

#include <stdexcept>
#include <string>

#include "collscope/half.hpp"
#include "collscope/layers/math/hd_math.hpp"

namespace collscope::layers::ops {
namespace {

Out out(Array& a) { return {a.data(), a.dtype()}; }
In in(const Array& a) { return {a.data(), a.dtype()}; }

void check_same_shape(const Array& a, const Array& b, const char* what) {
  if (!a.same_shape(b))
    throw std::logic_error(std::string(what) + ": shapes differ (" + std::to_string(a.rows()) +
                           " x " + std::to_string(a.cols()) + " vs " + std::to_string(b.rows()) +
                           " x " + std::to_string(b.cols()) + ")");
}

template <class T>
std::vector<T> stored(const Tensor& t) {
  std::vector<T> v(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) v[i] = hd::store<T>(t.data[i]);
  return v;
}

}  // namespace

Array zeros(Engine& e, std::size_t rows, std::size_t cols, DataType dtype) {
  Array a(e, rows, cols, dtype);
  e.memset(a.data(), 0, a.bytes());
  return a;
}

Array upload(Engine& e, const Tensor& t, DataType dtype) {
  Array a(e, t.rows, t.cols, dtype);
  if (dtype == DataType::float32) {
    e.upload(a.data(), t.data.data(), a.bytes());
  } else if (dtype == DataType::bfloat16) {
    const std::vector<bfloat16_t> v = stored<bfloat16_t>(t);
    e.upload(a.data(), v.data(), a.bytes());
  } else {
    throw std::logic_error("upload: values are float32 or bfloat16");
  }
  return a;
}

Array upload_int32(Engine& e, const std::vector<std::int32_t>& v) {
  Array a(e, v.size(), 1, DataType::int32);
  e.upload(a.data(), v.data(), a.bytes());
  return a;
}

Array upload_int64(Engine& e, const std::vector<std::int64_t>& v) {
  Array a(e, v.size(), 1, DataType::int64);
  e.upload(a.data(), v.data(), a.bytes());
  return a;
}

Tensor download(const Array& a) {
  Tensor t(a.rows(), a.cols());
  switch (a.dtype()) {
    case DataType::float32: a.engine().download(t.data.data(), a.data(), a.bytes()); break;
    case DataType::bfloat16: {
      const auto v = download_vector<bfloat16_t>(a);
      for (std::size_t i = 0; i < v.size(); ++i) t.data[i] = to_float(v[i]);
      break;
    }
    case DataType::int32: {
      const auto v = download_vector<std::int32_t>(a);
      for (std::size_t i = 0; i < v.size(); ++i) t.data[i] = static_cast<float>(v[i]);
      break;
    }
    case DataType::int64: {
      const auto v = download_vector<std::int64_t>(a);
      for (std::size_t i = 0; i < v.size(); ++i) t.data[i] = static_cast<float>(v[i]);
      break;
    }
    case DataType::uint8: {
      const auto v = download_vector<std::uint8_t>(a);
      for (std::size_t i = 0; i < v.size(); ++i) t.data[i] = static_cast<float>(v[i]);
      break;
    }
    default: throw std::logic_error("download: unsupported dtype");
  }
  return t;
}

Array clone(const Array& a) {
  Array c(a.engine(), a.rows(), a.cols(), a.dtype());
  a.engine().copy(c.data(), a.data(), a.bytes());
  return c;
}

Array cast(const Array& a, DataType dtype) {
  if (a.dtype() == dtype) return clone(a);
  Array c(a.engine(), a.rows(), a.cols(), dtype);
  a.engine().kernels().cast(out(c), in(a), a.size(), a.engine().stream());
  return c;
}

MatView view(const Array& a) { return {a.data(), a.rows(), a.cols(), a.cols(), a.dtype()}; }

MatView view(const Array& a, std::size_t r0, std::size_t rows, std::size_t c0, std::size_t cols) {
  return {a.at(r0, c0), rows, cols, a.cols(), a.dtype()};
}

MatSpan span(Array& a) { return {a.data(), a.rows(), a.cols(), a.cols(), a.dtype()}; }

MatSpan span(Array& a, std::size_t r0, std::size_t rows, std::size_t c0, std::size_t cols) {
  return {a.at(r0, c0), rows, cols, a.cols(), a.dtype()};
}

void matmul(const Array& a, Trans ta, const Array& b, Trans tb, Array& c, float beta) {
  GemmCall g;
  g.a = view(a);
  g.ta = ta;
  g.b = view(b);
  g.tb = tb;
  g.c = span(c);
  g.beta = beta;
  a.engine().run_gemm(g);
}

Array matmul(const Array& a, Trans ta, const Array& b, Trans tb, DataType out_dtype) {
  const std::size_t m = ta == Trans::no ? a.rows() : a.cols();
  const std::size_t n = tb == Trans::no ? b.cols() : b.rows();
  Array c(a.engine(), m, n, out_dtype);
  matmul(a, ta, b, tb, c);
  return c;
}

Array gelu(const Array& z, DataType out_dtype) {
  Array o(z.engine(), z.rows(), z.cols(), out_dtype);
  z.engine().kernels().gelu(out(o), in(z), z.size(), z.engine().stream());
  return o;
}

Array gelu_backward(const Array& da, const Array& z, DataType out_dtype) {
  check_same_shape(da, z, "gelu_backward");
  Array o(z.engine(), z.rows(), z.cols(), out_dtype);
  z.engine().kernels().gelu_backward(out(o), in(da), in(z), z.size(), z.engine().stream());
  return o;
}

void scale(Array& t, float factor) {
  t.engine().kernels().scale(out(t), factor, t.size(), t.engine().stream());
}

Array add(const Array& a, const Array& b, DataType out_dtype) {
  check_same_shape(a, b, "add");
  Array o(a.engine(), a.rows(), a.cols(), out_dtype);
  a.engine().kernels().add(out(o), in(a), in(b), a.size(), a.engine().stream());
  return o;
}

Array rows(const Array& a, std::size_t r0, std::size_t count) {
  Array o(a.engine(), count, a.cols(), a.dtype());
  a.engine().copy(o.data(), a.at(r0), o.bytes());
  return o;
}

void put_rows(Array& dst, std::size_t r0, const Array& src) {
  if (src.cols() != dst.cols() || src.dtype() != dst.dtype() || r0 + src.rows() > dst.rows())
    throw std::logic_error("put_rows: the rows do not fit");
  dst.engine().copy(dst.at(r0), src.data(), src.bytes());
}

Array columns(const Array& a, std::size_t c0, std::size_t count) {
  Array o(a.engine(), a.rows(), count, a.dtype());
  a.engine().kernels().copy2d(o.data(), count, a.at(0, c0), a.cols(), a.rows(), count,
                              dtype_size(a.dtype()), a.engine().stream());
  return o;
}

void put_columns(Array& dst, std::size_t c0, const Array& src) {
  if (src.rows() != dst.rows() || src.dtype() != dst.dtype() || c0 + src.cols() > dst.cols())
    throw std::logic_error("put_columns: the columns do not fit");
  dst.engine().kernels().copy2d(dst.at(0, c0), dst.cols(), src.data(), src.cols(), src.rows(),
                                src.cols(), dtype_size(src.dtype()), dst.engine().stream());
}

Array concat_rows(Engine& e, const std::vector<const Array*>& parts, std::size_t cols,
                  DataType dtype) {
  std::size_t total = 0;
  for (const Array* p : parts) total += p->rows();
  Array o(e, total, cols, dtype);
  std::size_t at = 0;
  for (const Array* p : parts) {
    if (p->rows() > 0) put_rows(o, at, *p);
    at += p->rows();
  }
  return o;
}

Array layernorm(const Array& x, const Array& gamma, const Array& beta, DataType out_dtype,
                LayerNormStats& stats) {
  Engine& e = x.engine();
  const std::size_t rows = x.rows(), h = x.cols();
  if (gamma.size() != h || beta.size() != h)
    throw std::logic_error("layernorm: gamma and beta must have H elements");
  Array y(e, rows, h, out_dtype);
  stats.mean = Array(e, rows, 1, DataType::float32);
  stats.rstd = Array(e, rows, 1, DataType::float32);
  e.kernels().layernorm(out(y), stats.mean.as<float>(), stats.rstd.as<float>(), in(x), in(gamma),
                        in(beta), rows, h, e.stream());
  return y;
}

LayerNormGrads layernorm_backward(const Array& x, const Array& gamma, const LayerNormStats& stats,
                                  const Array& dy, DataType out_dtype) {
  Engine& e = x.engine();
  check_same_shape(x, dy, "layernorm_backward");
  const std::size_t rows = x.rows(), h = x.cols();
  LayerNormGrads g{Array(e, rows, h, out_dtype), Array(e, 1, h, out_dtype),
                   Array(e, 1, h, out_dtype)};
  e.kernels().layernorm_backward(out(g.dx), in(x), in(gamma), in(dy), stats.mean.as<float>(),
                                 stats.rstd.as<float>(), rows, h, e.stream());
  e.kernels().layernorm_param_grads(out(g.dgamma), out(g.dbeta), in(x), in(dy),
                                    stats.mean.as<float>(), stats.rstd.as<float>(), rows, h,
                                    e.stream());
  return g;
}

}  // namespace collscope::layers::ops
