// The kernels' bodies (kernels.hpp), written once for the host loops and the CUDA
// kernels: each is a small struct of pointers and sizes with a COLLSCOPE_HD
// operator()(i) that does element, row, token, slot or column i. The host runs
// `for (i < n) body(i)`; CUDA runs the same body in a grid-stride kernel. Types: Out and
// In are the stored element types (float or bfloat16_t); values compute in float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/half.hpp"
#include "collscope/hd.hpp"
#include "collscope/layers/math/hd_math.hpp"
#include "collscope/layers/math/hd_routing.hpp"
#include "collscope/layers/math/hd_rows.hpp"

namespace collscope::layers::bodies {

// ---- element-wise ------------------------------------------------------------------------

template <class O, class I>
struct Cast {
  O* out;
  const I* in;
  COLLSCOPE_HD void operator()(std::size_t i) const { out[i] = hd::store<O>(hd::load(in[i])); }
};

template <class O, class I>
struct Gelu {
  O* out;
  const I* z;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    out[i] = hd::store<O>(hd::gelu(hd::load(z[i])));
  }
};

template <class O, class A, class Z>
struct GeluBackward {
  O* dz;
  const A* da;
  const Z* z;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    dz[i] = hd::store<O>(hd::load(da[i]) * hd::gelu_grad(hd::load(z[i])));
  }
};

template <class T>
struct Scale {
  T* t;
  float factor;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    t[i] = hd::store<T>(hd::load(t[i]) * factor);
  }
};

template <class O, class A, class B>
struct Add {
  O* out;
  const A* a;
  const B* b;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    out[i] = hd::store<O>(hd::load(a[i]) + hd::load(b[i]));
  }
};

// Element i of a rows x cols block, `elem` bytes each.
struct Copy2d {
  unsigned char* dst;
  std::size_t ld_dst;
  const unsigned char* src;
  std::size_t ld_src, cols, elem;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t r = i / cols, c = i % cols;
    for (std::size_t b = 0; b < elem; ++b)
      dst[(r * ld_dst + c) * elem + b] = src[(r * ld_src + c) * elem + b];
  }
};

template <class T>
struct SumBlocks {
  T* out;
  const T* parts;
  std::size_t blocks, n;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    float acc = 0;
    for (std::size_t b = 0; b < blocks; ++b) acc += hd::load(parts[b * n + i]);
    out[i] = hd::store<T>(acc);
  }
};

// ---- attention (row r) ------------------------------------------------------------------

template <class O>
struct Softmax {
  O* p;
  const float* s;
  std::size_t n, period;
  bool causal;
  float scale;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    const std::size_t keys = causal ? r % period + 1 : n;
    hd::softmax_row<float>(s + r * n, p + r * n, n, keys, scale, hd::Store<O>{});
  }
};

template <class O, class P>
struct SoftmaxBackward {
  O* ds;
  const float* dp;
  const P* p;
  std::size_t n;
  float scale;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    hd::softmax_backward_row<float>(dp + r * n, p + r * n, ds + r * n, n, scale, hd::Store<O>{});
  }
};

// ---- LayerNorm ---------------------------------------------------------------------------

template <class Y, class X, class G>
struct LayerNorm {
  Y* y;
  float* mean;
  float* rstd;
  const X* x;
  const G* gamma;
  const G* beta;
  std::size_t h;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    float m = 0, rs = 0;
    hd::layernorm_stats<float>(x + r * h, h, m, rs);
    mean[r] = m;
    rstd[r] = rs;
    for (std::size_t c = 0; c < h; ++c)
      y[r * h + c] = hd::store<Y>(hd::layernorm_value(hd::load(x[r * h + c]), m, rs,
                                                      hd::load(gamma[c]), hd::load(beta[c])));
  }
};

template <class O, class X, class G, class D>
struct LayerNormBackward {
  O* dx;
  const X* x;
  const G* gamma;
  const D* dy;
  const float* mean;
  const float* rstd;
  std::size_t h;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    hd::layernorm_backward_row<float>(x + r * h, gamma, dy + r * h, h, mean[r], rstd[r],
                                      dx + r * h, hd::Store<O>{});
  }
};

// Column c: the rows in order.
template <class O, class X, class D>
struct LayerNormParamGrads {
  O* dgamma;
  O* dbeta;
  const X* x;
  const D* dy;
  const float* mean;
  const float* rstd;
  std::size_t rows, h;
  COLLSCOPE_HD void operator()(std::size_t c) const {
    float g = 0, b = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const float d = hd::load(dy[r * h + c]);
      g += d * hd::layernorm_xhat(hd::load(x[r * h + c]), mean[r], rstd[r]);
      b += d;
    }
    dgamma[c] = hd::store<O>(g);
    dbeta[c] = hd::store<O>(b);
  }
};

// ---- vocabulary-parallel embedding and cross-entropy --------------------------------------

// Element (t, c): the token's row of this rank's table, or 0. Ids below row0 wrap to a
// large unsigned number, outside the table.
template <class T>
struct EmbeddingLookup {
  T* y;
  const T* table;
  const std::int32_t* ids;
  std::size_t row0, table_rows, h;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t t = i / h, c = i % h;
    const std::size_t row = static_cast<std::size_t>(ids[t]) - row0;
    y[i] = row < table_rows ? table[row * h + c] : hd::store<T>(0.0f);
  }
};

// Element (r, c) of out: the listed rows added in order.
template <class R>
struct AddRowsCsr {
  float* out;
  const R* rows;
  const std::int32_t* row_ptr;
  const std::int32_t* row_index;
  std::size_t h;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t r = i / h, c = i % h;
    float acc = out[i];
    for (std::int32_t q = row_ptr[r]; q < row_ptr[r + 1]; ++q)
      acc += hd::load(rows[static_cast<std::size_t>(row_index[q]) * h + c]);
    out[i] = acc;
  }
};

template <class L>
struct RowMax {
  float* out;
  const L* l;
  std::size_t n;
  COLLSCOPE_HD void operator()(std::size_t r) const { out[r] = hd::row_max<float>(l + r * n, n); }
};

template <class L>
struct Pick {
  float* out;
  const L* l;
  const std::int32_t* col;
  std::size_t col0, n;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    const std::size_t j = static_cast<std::size_t>(col[r]) - col0;
    out[r] = j < n ? hd::load(l[r * n + j]) : 0.0f;
  }
};

template <class L>
struct RowSumExp {
  float* out;
  const L* l;
  const float* max;
  std::size_t n;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    out[r] = hd::row_sum_exp<float>(l + r * n, n, max[r]);
  }
};

struct CrossEntropyLoss {
  float* loss;
  const float* sum_exp;
  const float* max;
  const float* target;
  COLLSCOPE_HD void operator()(std::size_t r) const {
    loss[r] = hd::cross_entropy_loss(sum_exp[r], max[r], target[r]);
  }
};

template <class O, class L>
struct CrossEntropyGrad {
  O* dl;
  const L* l;
  const float* max;
  const float* sum_exp;
  const std::int32_t* targets;
  std::size_t col0, n;
  float inv_tokens;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t r = i / n, j = i % n;
    const bool target = static_cast<std::size_t>(targets[r]) - col0 == j;
    dl[i] = hd::store<O>(
        hd::cross_entropy_grad(hd::load(l[i]), max[r], sum_exp[r], target, inv_tokens));
  }
};

// ---- MoE routing and permutation -----------------------------------------------------------

struct RoutingBiasAdd {
  float* logits;
  int mode;
  std::size_t experts, topk;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    logits[i] += static_cast<float>(hd::routing_bias(mode, experts, topk, i / experts, i % experts));
  }
};

struct Route {
  std::int32_t* expert;
  float* gate;
  const float* logits;
  std::size_t experts, k;
  int order;
  COLLSCOPE_HD void operator()(std::size_t t) const {
    hd::top_k_of(logits + t * experts, experts, k, expert + t * k);
    hd::gates<float>(logits + t * experts, experts, expert + t * k, k, order, gate + t * k);
  }
};

struct Capacity {
  std::uint8_t* kept;
  const std::int32_t* expert;
  const float* gate;
  std::size_t slots, capacity;
  COLLSCOPE_HD void operator()(std::size_t s) const {
    kept[s] = hd::within_capacity(expert, gate, slots, s, capacity) ? 1 : 0;
  }
};

struct ExpertCounts {
  std::int64_t* counts;
  const std::int32_t* expert;
  const std::uint8_t* kept;
  std::size_t slots;
  COLLSCOPE_HD void operator()(std::size_t e) const {
    std::int64_t n = 0;
    for (std::size_t s = 0; s < slots; ++s) n += kept[s] && expert[s] == static_cast<std::int32_t>(e);
    counts[e] = n;
  }
};

struct Permutation {
  std::int32_t* order;
  std::int32_t* slot_row;
  const std::int32_t* expert;
  const std::uint8_t* kept;
  std::size_t slots;
  COLLSCOPE_HD void operator()(std::size_t s) const {
    if (!kept[s]) {
      slot_row[s] = -1;
      return;
    }
    const std::size_t pos = hd::permuted_position(expert, kept, slots, s);
    slot_row[s] = static_cast<std::int32_t>(pos);
    order[pos] = static_cast<std::int32_t>(s);
  }
};

template <class T>
struct GatherRows {
  T* out;
  const T* in;
  const std::int32_t* index;
  std::size_t divisor, cols;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t r = i / cols, c = i % cols;
    out[i] = in[static_cast<std::size_t>(index[r]) / divisor * cols + c];
  }
};

template <class O, class I>
struct GatherRowsScaled {
  O* out;
  const I* in;
  const float* weight;
  const std::int32_t* index;
  std::size_t divisor, cols;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t r = i / cols, c = i % cols;
    const std::size_t s = static_cast<std::size_t>(index[r]);
    out[i] = hd::store<O>(weight[s] * hd::load(in[s / divisor * cols + c]));
  }
};

// Element (t, c): init (or 0) plus the token's kept slots' rows, lowest row first.
template <class O, class N, class R>
struct CombineRows {
  O* out;
  const N* init;  // may be null
  const R* rows;
  const std::int32_t* slot_row;
  const float* weight;  // may be null: 1
  std::size_t k, cols;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t t = i / cols, c = i % cols;
    float acc = init ? hd::load(init[i]) : 0.0f;
    std::int32_t last = -1;
    for (std::size_t taken = 0; taken < k; ++taken) {
      std::int32_t next = -1;
      std::size_t slot = 0;
      for (std::size_t j = 0; j < k; ++j) {
        const std::int32_t row = slot_row[t * k + j];
        if (row > last && (next < 0 || row < next)) next = row, slot = t * k + j;
      }
      if (next < 0) break;
      const float v = hd::load(rows[static_cast<std::size_t>(next) * cols + c]);
      acc += weight ? weight[slot] * v : v;
      last = next;
    }
    out[i] = hd::store<O>(acc);
  }
};

template <class D, class R>
struct SlotDots {
  float* dgate;
  const D* dy;
  const R* o;
  const std::int32_t* order;
  std::size_t k, cols;
  COLLSCOPE_HD void operator()(std::size_t i) const {
    const std::size_t s = static_cast<std::size_t>(order[i]), t = s / k;
    float d = 0;
    for (std::size_t c = 0; c < cols; ++c) d += hd::load(dy[t * cols + c]) * hd::load(o[i * cols + c]);
    dgate[s] = d;
  }
};

struct RouterBackward {
  float* dlogits;
  const float* logits;
  const std::int32_t* expert;
  const float* dgate;
  std::size_t experts, k;
  int order;
  COLLSCOPE_HD void operator()(std::size_t t) const {
    hd::gates_backward<float>(logits + t * experts, experts, expert + t * k, k, order,
                              dgate + t * k, dlogits + t * experts);
  }
};

}  // namespace collscope::layers::bodies
