// The kernels (kernels.hpp) over a launch policy, written once for the host and CUDA:
// each method picks the element types from the dtypes and hands a body
// (kernel_bodies.hpp) to Launch:
//
//   Launch::each(n, body, stream)          body(i) for i < n (a loop, or a grid-stride kernel)
//   Launch::rows(rows, body, s)            a row-wise body (softmax, LayerNorm, the
//                                          cross-entropy's max and sum): the host loops
//                                          over rows; CUDA runs a row per warp
//
// Included by host_kernels.cpp and cuda_kernels.cu only.
#pragma once

#include <stdexcept>
#include <string>

#include "collscope/layers/compute/kernels.hpp"
#include "kernel_bodies.hpp"

namespace collscope::layers {

// Calls f(T{}) with the value type of t: float or bfloat16_t.
template <class F>
void with_value_type(DataType t, F&& f) {
  if (t == DataType::float32) return f(float{});
  if (t == DataType::bfloat16) return f(bfloat16_t{});
  throw std::logic_error("layer kernel: values must be float32 or bfloat16, got " +
                         std::string(dtype_name(t)));
}

template <class Launch>
class KernelSet final : public Kernels {
 public:
  std::string name() const override { return Launch::name(); }

  void cast(Out out, In in, std::size_t n, Stream s) override {
    with_value_type(out.t, [&](auto o) {
      with_value_type(in.t, [&](auto i) {
        using O = decltype(o);
        using I = decltype(i);
        Launch::each(n, bodies::Cast<O, I>{static_cast<O*>(out.p), static_cast<const I*>(in.p)}, s);
      });
    });
  }

  void gelu(Out out, In z, std::size_t n, Stream s) override {
    with_value_type(out.t, [&](auto o) {
      with_value_type(z.t, [&](auto i) {
        using O = decltype(o);
        using I = decltype(i);
        Launch::each(n, bodies::Gelu<O, I>{static_cast<O*>(out.p), static_cast<const I*>(z.p)}, s);
      });
    });
  }

  void gelu_backward(Out dz, In da, In z, std::size_t n, Stream s) override {
    with_value_type(dz.t, [&](auto o) {
      with_value_type(da.t, [&](auto a) {
        with_value_type(z.t, [&](auto zz) {
          using O = decltype(o);
          using A = decltype(a);
          using Z = decltype(zz);
          Launch::each(n, bodies::GeluBackward<O, A, Z>{static_cast<O*>(dz.p),
                                                        static_cast<const A*>(da.p),
                                                        static_cast<const Z*>(z.p)}, s);
        });
      });
    });
  }

  void scale(Out t, float factor, std::size_t n, Stream s) override {
    with_value_type(t.t, [&](auto v) {
      using T = decltype(v);
      Launch::each(n, bodies::Scale<T>{static_cast<T*>(t.p), factor}, s);
    });
  }

  void add(Out out, In a, In b, std::size_t n, Stream s) override {
    with_value_type(out.t, [&](auto o) {
      with_value_type(a.t, [&](auto x) {
        with_value_type(b.t, [&](auto y) {
          using O = decltype(o);
          using A = decltype(x);
          using B = decltype(y);
          Launch::each(n, bodies::Add<O, A, B>{static_cast<O*>(out.p), static_cast<const A*>(a.p),
                                               static_cast<const B*>(b.p)}, s);
        });
      });
    });
  }

  void copy2d(void* dst, std::size_t ld_dst, const void* src, std::size_t ld_src,
              std::size_t rows, std::size_t cols, std::size_t elem, Stream s) override {
    Launch::each(rows * cols,
                 bodies::Copy2d{static_cast<unsigned char*>(dst), ld_dst,
                                static_cast<const unsigned char*>(src), ld_src, cols, elem},
                 s);
  }

  void sum_blocks(Out out, In parts, std::size_t blocks, std::size_t n, Stream s) override {
    same_type(out.t, parts.t, "sum_blocks");
    with_value_type(out.t, [&](auto v) {
      using T = decltype(v);
      Launch::each(n, bodies::SumBlocks<T>{static_cast<T*>(out.p), static_cast<const T*>(parts.p),
                                           blocks, n}, s);
    });
  }

  void softmax(Out p, const float* scores, std::size_t rows, std::size_t n, std::size_t period,
               bool causal, float scale, Stream s) override {
    with_value_type(p.t, [&](auto o) {
      using O = decltype(o);
      Launch::rows(rows,
                   bodies::Softmax<O>{static_cast<O*>(p.p), scores, n, period, causal, scale}, s);
    });
  }

  void softmax_backward(Out ds, const float* dp, In p, std::size_t rows, std::size_t n,
                        float scale, Stream s) override {
    with_value_type(ds.t, [&](auto o) {
      with_value_type(p.t, [&](auto q) {
        using O = decltype(o);
        using P = decltype(q);
        Launch::rows(rows,
                     bodies::SoftmaxBackward<O, P>{static_cast<O*>(ds.p), dp,
                                                   static_cast<const P*>(p.p), n, scale},
                     s);
      });
    });
  }

  void layernorm(Out y, float* mean, float* rstd, In x, In gamma, In beta, std::size_t rows,
                 std::size_t h, Stream s) override {
    same_type(gamma.t, beta.t, "layernorm");
    with_value_type(y.t, [&](auto yy) {
      with_value_type(x.t, [&](auto xx) {
        with_value_type(gamma.t, [&](auto gg) {
          using Y = decltype(yy);
          using X = decltype(xx);
          using G = decltype(gg);
          Launch::rows(rows,
                       bodies::LayerNorm<Y, X, G>{static_cast<Y*>(y.p), mean, rstd,
                                                  static_cast<const X*>(x.p),
                                                  static_cast<const G*>(gamma.p),
                                                  static_cast<const G*>(beta.p), h},
                       s);
        });
      });
    });
  }

  void layernorm_backward(Out dx, In x, In gamma, In dy, const float* mean, const float* rstd,
                          std::size_t rows, std::size_t h, Stream s) override {
    same_type(x.t, dy.t, "layernorm_backward");
    with_value_type(dx.t, [&](auto o) {
      with_value_type(x.t, [&](auto xx) {
        with_value_type(gamma.t, [&](auto gg) {
          using O = decltype(o);
          using X = decltype(xx);
          using G = decltype(gg);
          Launch::rows(rows,
                       bodies::LayerNormBackward<O, X, G, X>{
                           static_cast<O*>(dx.p), static_cast<const X*>(x.p),
                           static_cast<const G*>(gamma.p), static_cast<const X*>(dy.p), mean,
                           rstd, h},
                       s);
        });
      });
    });
  }

  void layernorm_param_grads(Out dgamma, Out dbeta, In x, In dy, const float* mean,
                             const float* rstd, std::size_t rows, std::size_t h,
                             Stream s) override {
    same_type(dgamma.t, dbeta.t, "layernorm_param_grads");
    same_type(x.t, dy.t, "layernorm_param_grads");
    with_value_type(dgamma.t, [&](auto o) {
      with_value_type(x.t, [&](auto xx) {
        using O = decltype(o);
        using X = decltype(xx);
        Launch::each(h,
                     bodies::LayerNormParamGrads<O, X, X>{
                         static_cast<O*>(dgamma.p), static_cast<O*>(dbeta.p),
                         static_cast<const X*>(x.p), static_cast<const X*>(dy.p), mean, rstd,
                         rows, h},
                     s);
      });
    });
  }

  void embedding_lookup(Out y, In table, const std::int32_t* ids, std::size_t row0,
                        std::size_t table_rows, std::size_t tokens, std::size_t h,
                        Stream s) override {
    same_type(y.t, table.t, "embedding_lookup");
    with_value_type(y.t, [&](auto v) {
      using T = decltype(v);
      Launch::each(tokens * h,
                   bodies::EmbeddingLookup<T>{static_cast<T*>(y.p), static_cast<const T*>(table.p),
                                              ids, row0, table_rows, h},
                   s);
    });
  }

  void add_rows_csr(float* out, In rows, const std::int32_t* row_ptr,
                    const std::int32_t* row_index, std::size_t out_rows, std::size_t h,
                    Stream s) override {
    with_value_type(rows.t, [&](auto v) {
      using R = decltype(v);
      Launch::each(out_rows * h,
                   bodies::AddRowsCsr<R>{out, static_cast<const R*>(rows.p), row_ptr, row_index, h},
                   s);
    });
  }

  void row_max(float* out, In l, std::size_t rows, std::size_t n, Stream s) override {
    with_value_type(l.t, [&](auto v) {
      using L = decltype(v);
      Launch::rows(rows, bodies::RowMax<L>{out, static_cast<const L*>(l.p), n},
                   s);
    });
  }

  void pick(float* out, In l, const std::int32_t* col, std::size_t col0, std::size_t rows,
            std::size_t n, Stream s) override {
    with_value_type(l.t, [&](auto v) {
      using L = decltype(v);
      Launch::each(rows, bodies::Pick<L>{out, static_cast<const L*>(l.p), col, col0, n}, s);
    });
  }

  void row_sum_exp(float* out, In l, const float* max, std::size_t rows, std::size_t n,
                   Stream s) override {
    with_value_type(l.t, [&](auto v) {
      using L = decltype(v);
      Launch::rows(rows,
                   bodies::RowSumExp<L>{out, static_cast<const L*>(l.p), max, n}, s);
    });
  }

  void cross_entropy_loss(float* loss, const float* sum_exp, const float* max,
                          const float* target_logit, std::size_t rows, Stream s) override {
    Launch::each(rows, bodies::CrossEntropyLoss{loss, sum_exp, max, target_logit}, s);
  }

  void cross_entropy_grad(Out dl, In l, const float* max, const float* sum_exp,
                          const std::int32_t* targets, std::size_t col0, std::size_t rows,
                          std::size_t n, float inv_tokens, Stream s) override {
    with_value_type(dl.t, [&](auto o) {
      with_value_type(l.t, [&](auto v) {
        using O = decltype(o);
        using L = decltype(v);
        Launch::each(rows * n,
                     bodies::CrossEntropyGrad<O, L>{static_cast<O*>(dl.p),
                                                    static_cast<const L*>(l.p), max, sum_exp,
                                                    targets, col0, n, inv_tokens},
                     s);
      });
    });
  }

  void add_routing_bias(float* logits, const RoutingBias& bias, std::size_t tokens,
                        Stream s) override {
    Launch::each(tokens * bias.experts,
                 bodies::RoutingBiasAdd{logits, bias.mode, bias.experts, bias.topk}, s);
  }

  void route(std::int32_t* expert, float* gate, const float* logits, std::size_t tokens,
             std::size_t experts, std::size_t k, int order, Stream s) override {
    Launch::each(tokens, bodies::Route{expert, gate, logits, experts, k, order}, s);
  }

  void capacity(std::uint8_t* kept, const std::int32_t* expert, const float* gate,
                std::size_t slots, std::size_t capacity, Stream s) override {
    Launch::each(slots, bodies::Capacity{kept, expert, gate, slots, capacity}, s);
  }

  void expert_counts(std::int64_t* counts, const std::int32_t* expert, const std::uint8_t* kept,
                     std::size_t slots, std::size_t experts, Stream s) override {
    Launch::each(experts, bodies::ExpertCounts{counts, expert, kept, slots}, s);
  }

  void permutation(std::int32_t* order, std::int32_t* slot_row, const std::int32_t* expert,
                   const std::uint8_t* kept, std::size_t slots, Stream s) override {
    Launch::each(slots, bodies::Permutation{order, slot_row, expert, kept, slots}, s);
  }

  void gather_rows(Out out, In in, const std::int32_t* index, std::size_t divisor,
                   std::size_t rows, std::size_t cols, Stream s) override {
    same_type(out.t, in.t, "gather_rows");
    with_value_type(out.t, [&](auto v) {
      using T = decltype(v);
      Launch::each(rows * cols,
                   bodies::GatherRows<T>{static_cast<T*>(out.p), static_cast<const T*>(in.p), index,
                                         divisor, cols},
                   s);
    });
  }

  void gather_rows_scaled(Out out, In in, const float* weight, const std::int32_t* index,
                          std::size_t divisor, std::size_t rows, std::size_t cols,
                          Stream s) override {
    with_value_type(out.t, [&](auto o) {
      with_value_type(in.t, [&](auto i) {
        using O = decltype(o);
        using I = decltype(i);
        Launch::each(rows * cols,
                     bodies::GatherRowsScaled<O, I>{static_cast<O*>(out.p),
                                                    static_cast<const I*>(in.p), weight, index,
                                                    divisor, cols},
                     s);
      });
    });
  }

  void combine_rows(Out out, In init, In rows, const std::int32_t* slot_row, const float* weight,
                    std::size_t tokens, std::size_t k, std::size_t cols, Stream s) override {
    const DataType init_t = init.p ? init.t : out.t;
    with_value_type(out.t, [&](auto o) {
      with_value_type(init_t, [&](auto n) {
        with_value_type(rows.t, [&](auto r) {
          using O = decltype(o);
          using N = decltype(n);
          using R = decltype(r);
          Launch::each(tokens * cols,
                       bodies::CombineRows<O, N, R>{static_cast<O*>(out.p),
                                                    static_cast<const N*>(init.p),
                                                    static_cast<const R*>(rows.p), slot_row,
                                                    weight, k, cols},
                       s);
        });
      });
    });
  }

  void slot_dots(float* dgate, In dy, In o, const std::int32_t* order, std::size_t rows,
                 std::size_t k, std::size_t cols, Stream s) override {
    with_value_type(dy.t, [&](auto d) {
      with_value_type(o.t, [&](auto r) {
        using D = decltype(d);
        using R = decltype(r);
        Launch::each(rows,
                     bodies::SlotDots<D, R>{dgate, static_cast<const D*>(dy.p),
                                            static_cast<const R*>(o.p), order, k, cols},
                     s);
      });
    });
  }

  void router_backward(float* dlogits, const float* logits, const std::int32_t* expert,
                       const float* dgate, std::size_t tokens, std::size_t experts, std::size_t k,
                       int order, Stream s) override {
    Launch::each(tokens, bodies::RouterBackward{dlogits, logits, expert, dgate, experts, k, order},
                 s);
  }

 private:
  static void same_type(DataType a, DataType b, const char* what) {
    if (a != b)
      throw std::logic_error(std::string("layer kernel ") + what + ": dtypes differ (" +
                             std::string(dtype_name(a)) + ", " + std::string(dtype_name(b)) + ")");
  }
};

}  // namespace collscope::layers
