// The engines and their ops (layers/compute), without MPI. Run with
// COLLSCOPE_DEVICE_EMULATION=1 (ctest sets it): the device engine is then the emulated
// device's, whose ops must give the host engine's bits (the same OpenBLAS products and
// host loops behind the device runtime's memory and streams), and the host engine's ops
// must give the bits of the host Tensor math (math.hpp, layernorm.hpp, moe_routing.hpp)
// the layers ran before the engines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/framework/timeline.hpp"
#include "collscope/layers/math/data.hpp"
#include "collscope/layers/math/head_blocks.hpp"
#include "collscope/layers/math/layernorm.hpp"
#include "collscope/layers/math/math.hpp"
#include "collscope/layers/math/moe_routing.hpp"
#ifndef COLLSCOPE_NO_CUBLAS_HEADER
#include "cublas_library.hpp"
#endif

namespace collscope::layers {
namespace {

constexpr DataType kDtypes[] = {DataType::float32, DataType::bfloat16};

Tensor data(const char* name, std::size_t rows, std::size_t cols, DataType st, float scale = 1) {
  return make_full(7, {name}, rows, cols, scale, st);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.same_shape(b) &&
         std::memcmp(a.data.data(), b.data.data(), a.size() * sizeof(float)) == 0;
}

class Engines : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override {
    host_ = make_host_engine();
    device_ = make_device_engine(device::runtime());
  }
  void TearDown() override {
    device_->synchronize();
    device_->release_all();
  }
  DataType st() const { return GetParam(); }

  std::unique_ptr<Engine> host_, device_;
};

// The same op on both engines: each runs `op` on its own uploads of the inputs.
template <class Op>
void expect_engines_agree(Engine& host, Engine& device, Op op, const char* what) {
  const Tensor h = op(host), d = op(device);
  EXPECT_TRUE(same_bits(h, d)) << what;
}

TEST_P(Engines, MatmulEveryTransposeMatchesTheTensorMath) {
  const Tensor a = data("A", 5, 7, st()), b = data("B", 7, 3, st()), at = data("At", 7, 5, st()),
               bt = data("Bt", 3, 7, st());
  const auto run = [&](Engine& e, const Tensor& x, Trans tx, const Tensor& y, Trans ty) {
    return ops::download(ops::matmul(ops::upload(e, x, st()), tx, ops::upload(e, y, st()), ty, st()));
  };
  const struct {
    const Tensor &x, &y;
    Trans tx, ty;
  } cases[] = {{a, b, Trans::no, Trans::no}, {at, b, Trans::yes, Trans::no},
               {a, bt, Trans::no, Trans::yes}, {at, bt, Trans::yes, Trans::yes}};
  for (const auto& c : cases) {
    const Tensor want = matmul(c.x, c.tx, c.y, c.ty, st());
    EXPECT_TRUE(same_bits(run(*host_, c.x, c.tx, c.y, c.ty), want));
    EXPECT_TRUE(same_bits(run(*device_, c.x, c.tx, c.y, c.ty), want));
  }
}

TEST_P(Engines, ElementOpsMatchTheTensorMath) {
  const Tensor z = data("Z", 6, 9, st(), 3), da = data("dA", 6, 9, st());
  for (Engine* e : {host_.get(), device_.get()}) {
    const Array zz = ops::upload(*e, z, st()), dd = ops::upload(*e, da, st());
    EXPECT_TRUE(same_bits(ops::download(ops::gelu(zz, st())), gelu(z, st())));
    EXPECT_TRUE(same_bits(ops::download(ops::gelu_backward(dd, zz, st())), gelu_backward(da, z, st())));
    Array s = ops::clone(zz);
    ops::scale(s, 0.3f);
    Tensor want = z;
    scale(want, 0.3f, st());
    EXPECT_TRUE(same_bits(ops::download(s), want));
  }
}

TEST_P(Engines, LayerNormMatchesTheTensorMath) {
  const Tensor x = data("X", 5, 12, st(), 2), dy = data("dY", 5, 12, st());
  Tensor gamma = data("g", 1, 12, st()), beta = data("b", 1, 12, st());
  LayerNormSaved saved;
  const Tensor y = layernorm_forward(x, gamma, beta, st(), saved);
  const LayerNormGrads g = layernorm_backward(x, gamma, saved, dy, st());
  for (Engine* e : {host_.get(), device_.get()}) {
    ops::LayerNormStats stats;
    const Array xx = ops::upload(*e, x, st()), gg = ops::upload(*e, gamma, st());
    EXPECT_TRUE(same_bits(ops::download(ops::layernorm(xx, gg, ops::upload(*e, beta, st()), st(), stats)), y));
    const ops::LayerNormGrads a = ops::layernorm_backward(xx, gg, stats, ops::upload(*e, dy, st()), st());
    EXPECT_TRUE(same_bits(ops::download(a.dx), g.dx));
    EXPECT_TRUE(same_bits(ops::download(a.dgamma), g.dgamma));
    EXPECT_TRUE(same_bits(ops::download(a.dbeta), g.dbeta));
  }
}

// The attention core's batched GEMMs on views of QKV against math.hpp's one head at a
// time on copies (head_blocks.hpp), as the layers computed it before.
TEST_P(Engines, AttentionCoreMatchesOneHeadAtATime) {
  const std::size_t s = 4, nb = 2, d = 3, heads = 2, t = s * nb, h = heads * d;
  const Tensor x = data("X", t, 2 * h, st()), wqkv = data("Wqkv", 2 * h, 3 * h, st(), 0.5f),
               dctx = data("dC", t, h, st());
  const AttentionShape sh{nb, d, true};
  const Tensor qkv = matmul(x, Trans::no, wqkv, Trans::no, st());
  Tensor context(t, h), dqkv(t, 3 * h);
  for (std::size_t g = 0; g < heads; ++g)
    for (std::size_t b = 0; b < nb; ++b) {
      const head_blocks::HeadQkv<float> q(qkv, nb, b, g, d);
      const AttentionOut out = attention_head(q.q, q.k, q.v, true, st());
      head_blocks::put_head_block(context, nb, b, g * d, out.o);
      head_blocks::put_head_grads(dqkv, nb, b, g, d,
                                  attention_head_backward(q.q, q.k, q.v, out.p,
                                                          head_blocks::head_block(dctx, nb, b, g * d, d), st()));
    }
  for (Engine* e : {host_.get(), device_.get()}) {
    AttentionSaved saved;
    attention_core_forward(ops::upload(*e, x, st()), ops::upload(*e, wqkv, st()), sh, st(), saved);
    EXPECT_TRUE(same_bits(ops::download(saved.context), context));
    // dS in float32, as the host keeps it: the same bits on the emulated device.
    const Array got = attention_core_backward(saved, ops::upload(*e, dctx, st()), sh, st(),
                                              DataType::float32);
    EXPECT_TRUE(same_bits(ops::download(got), dqkv));
  }
}

TEST_P(Engines, RoutingKernelsMatchRoute) {
  const std::size_t tokens = 9, experts = 4, k = 2;
  for (double capacity : {0.0, 1.0})
    for (RouterOrder order : {RouterOrder::softmax_topk, RouterOrder::topk_softmax}) {
      const RouterSpec spec{experts, k, capacity, order, RoutingMode::learned};
      const Tensor logits = data("L", tokens, experts, DataType::float32);
      const Routing want = route(logits.data, tokens, spec);
      for (Engine* e : {host_.get(), device_.get()}) {
        Kernels& kk = e->kernels();
        const Array l = ops::upload(*e, logits, DataType::float32);
        Array expert(*e, tokens * k, 1, DataType::int32), gate(*e, tokens * k, 1, DataType::float32),
            kept(*e, tokens * k, 1, DataType::uint8), counts(*e, experts, 1, DataType::int64),
            order_out(*e, want.order.size(), 1, DataType::int32),
            slot_row(*e, tokens * k, 1, DataType::int32);
        kk.route(expert.as<std::int32_t>(), gate.as<float>(), l.as<float>(), tokens, experts, k,
                 order == RouterOrder::softmax_topk ? 0 : 1, e->stream());
        kk.capacity(kept.as<std::uint8_t>(), expert.as<std::int32_t>(), gate.as<float>(),
                    tokens * k, expert_capacity(spec, tokens), e->stream());
        kk.expert_counts(counts.as<std::int64_t>(), expert.as<std::int32_t>(),
                         kept.as<std::uint8_t>(), tokens * k, experts, e->stream());
        kk.permutation(order_out.as<std::int32_t>(), slot_row.as<std::int32_t>(),
                       expert.as<std::int32_t>(), kept.as<std::uint8_t>(), tokens * k, e->stream());
        const auto ex = ops::download_vector<std::int32_t>(expert);
        const auto ga = ops::download_vector<float>(gate);
        const auto ke = ops::download_vector<std::uint8_t>(kept);
        const auto co = ops::download_vector<std::int64_t>(counts);
        const auto ord = ops::download_vector<std::int32_t>(order_out);
        EXPECT_EQ(std::vector<int>(ex.begin(), ex.end()), want.expert);
        EXPECT_EQ(ga, want.gate);
        EXPECT_EQ(ke, want.kept);
        EXPECT_EQ(co, want.counts);
        EXPECT_EQ(std::vector<std::size_t>(ord.begin(), ord.end()), want.order);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Storage, Engines, ::testing::ValuesIn(kDtypes),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// A batch of products on views of wider arrays equals each product on copies.
TEST(Gemm, BatchedViewsEqualProductsOfCopies) {
  auto e = make_host_engine();
  const Tensor a = data("A", 4, 12, DataType::float32), b = data("B", 4, 12, DataType::float32);
  Array aa = ops::upload(*e, a, DataType::float32), bb = ops::upload(*e, b, DataType::float32);
  Array c(*e, 3 * 4, 4, DataType::float32);
  GemmCall g;  // product i: columns [4 i, 4 i + 3) of A times those of B, transposed
  g.a = ops::view(aa, 0, 4, 0, 3);
  g.b = ops::view(bb, 0, 4, 0, 3);
  g.tb = Trans::yes;
  g.c = ops::span(c, 0, 4, 0, 4);
  g.batch = 3;
  g.stride_a = g.stride_b = 4;
  g.stride_c = 16;
  e->run_gemm(g);
  const Tensor got = ops::download(c);
  for (std::size_t i = 0; i < 3; ++i) {
    const Tensor want = matmul(column_block(a, 4 * i, 3), Trans::no, column_block(b, 4 * i, 3),
                               Trans::yes, DataType::float32);
    EXPECT_TRUE(same_bits(row_block(got, 4 * i, 4), want)) << "product " << i;
  }
}

TEST(Gemm, RefusesShapesThatDoNotChain) {
  auto e = make_host_engine();
  Array a(*e, 2, 3, DataType::float32), b(*e, 4, 2, DataType::float32), c(*e, 2, 2, DataType::float32);
  EXPECT_THROW(ops::matmul(a, Trans::no, b, Trans::no, c), std::logic_error);
}

TEST(Timeline, ExposedIsWhatNoComputeCovers) {
  const Intervals busy = union_of({{5, 8}, {0, 2}, {1, 3}});
  EXPECT_EQ(busy, (Intervals{{0, 3}, {5, 8}}));
  EXPECT_DOUBLE_EQ(length_of(busy), 6);
  EXPECT_DOUBLE_EQ(uncovered(2, 6, busy), 2);   // [3, 5] is exposed
  EXPECT_DOUBLE_EQ(uncovered(5, 8, busy), 0);   // hidden behind compute
  EXPECT_DOUBLE_EQ(uncovered(9, 10, busy), 1);  // after every compute
}

// The host engine's timeline: a call between two compute stretches is all exposed.
TEST(Timeline, SerialCallIsExposed) {
  auto e = make_host_engine();
  Timeline t(*e);
  t.begin();
  t.pause();
  t.comm_start(nullptr);
  t.comm_end(nullptr);
  t.resume();
  t.end();
  const PassTimes p = t.read();
  ASSERT_EQ(p.call_us.size(), 1u);
  EXPECT_DOUBLE_EQ(p.call_exposed_us[0], p.call_us[0]);
  EXPECT_DOUBLE_EQ(p.exposed_us, p.comm_us);
  EXPECT_LE(p.compute_us + p.comm_us, p.total_us + 1e-9);
}

TEST(DevicePool, ReusesABlockOnlyAfterRecycle) {
  auto e = make_device_engine(device::runtime());
  void* p = e->allocate(1000);
  e->release(p, 1000);
  void* q = e->allocate(1000);
  EXPECT_NE(p, q);  // given back, not yet reusable: a stream may still read it
  e->release(q, 1000);
  e->recycle();
  void* r = e->allocate(1000);
  EXPECT_TRUE(r == p || r == q);
  e->release(r, 1000);
  e->release_all();
}

#ifndef COLLSCOPE_NO_CUBLAS_HEADER
TEST(Cublas, MissingLibraryIsOneLine) {
  cublas::Library lib;
  const std::string why = cublas::open_library("/nonexistent/libcublas.so.13", lib);
  EXPECT_NE(why.find("cannot load cuBLAS ("), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

TEST(Cublas, BindsEveryFunctionWhereInstalled) {
  cublas::Library lib;
  const std::string why = cublas::open_library("libcublas.so.13", lib);
  if (why.find("cannot load") != std::string::npos) GTEST_SKIP() << why;
  EXPECT_EQ(why, "");
  EXPECT_GE(lib.version, 120000) << lib.version_text();
  EXPECT_NE(lib.GemmStridedBatchedEx, nullptr);
}
#endif

}  // namespace
}  // namespace collscope::layers
