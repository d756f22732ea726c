// The layers' plans (their collective call sites and counts, from the shapes) and the
// shared command line, without running anything.
#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <vector>

#include "collscope/errors.hpp"
#include "collscope/layers/framework/options.hpp"
#include "collscope/layers/pipelines/catalogue.hpp"

namespace collscope::layers {
namespace {

// A catalogue pipeline's layer, beside its description.
struct Made {
  const LayerDescription& description;
  std::unique_ptr<Layer> layer;
  Layer* operator->() const { return layer.get(); }
};

Made make(std::string_view program) {
  const Pipeline& p = pipeline(program);
  return {p.description, p.make()};
}

LayerOptions parse(const Made& m, std::vector<const char*> args) {
  args.insert(args.begin(), "layer");
  return parse_layer_options(*m.layer, m.description, static_cast<int>(args.size()),
                             args.data());
}

ParallelConfig layout(const Made& m, const LayerOptions& o, int world) {
  return parallel_config(m.description, o, world);
}

AlgorithmChoice algorithms(const Made& m, const LayerOptions& o) {
  return resolve_algorithms(m.description, o);
}

TEST(TpMlpPlan, OneAllreduceOfTHPerPass) {
  auto layer = make("layer_tp_mlp");
  const LayerOptions o = parse(layer, {"-S", "5", "-B", "3", "-H", "7", "--pass", "both"});
  const ParallelConfig c = layout(layer, o, 3);
  EXPECT_EQ(c.tp, 3);  // --tp defaults to every rank
  const std::vector<PlannedCall> plan = layer->plan(c, o.passes);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].site, "fwd fc2 allreduce Y [T,H]");
  EXPECT_EQ(plan[1].site, "bwd fc1 allreduce dX [T,H]");
  for (const PlannedCall& p : plan) {
    EXPECT_EQ(p.collective, Collective::allreduce);
    EXPECT_EQ(p.group, GroupKind::tp);
    EXPECT_EQ(p.count, 5u * 3u * 7u);
  }
  EXPECT_EQ(layer->plan(c, {true, false}).size(), 1u);
  EXPECT_EQ(layer->plan(c, {false, true}).front().site, "bwd fc1 allreduce dX [T,H]");
  // F defaults to 4H = 28, which TP 3 does not divide.
  EXPECT_EQ(config_violation(c, o.shape.dims).value_or(""), "FFN size 28 is not divisible by TP 3");
}

TEST(DpGradPlan, OneAllreduceOfTheShardOnTheDpGroup) {
  auto layer = make("layer_dp_grad");
  const LayerOptions o = parse(layer, {"-H", "6", "-K", "10", "--tp", "2"});
  const ParallelConfig c = layout(layer, o, 4);
  EXPECT_EQ(c.dp(), 2);
  const std::vector<PlannedCall> plan = layer->plan(c, o.passes);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].group, GroupKind::dp);
  EXPECT_EQ(plan[0].count, 6u * 5u);
  EXPECT_TRUE(layer->plan(c, {true, false}).empty());  // forward moves nothing
  EXPECT_EQ(layout(layer, parse(layer, {}), 4).tp, 1);  // --tp defaults to 1
}

TEST(TpAttentionPlan, OneAllreduceOfTHPerPassAndHeadsByTp) {
  auto layer = make("layer_tp_attention");
  const LayerOptions o = parse(layer, {"-S", "5", "-B", "3", "-H", "12", "--heads", "6"});
  const ParallelConfig c = layout(layer, o, 4);
  const std::vector<PlannedCall> plan = layer->plan(c, o.passes);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].site, "fwd out-proj allreduce Y [T,H]");
  EXPECT_EQ(plan[1].site, "bwd qkv allreduce dX [T,H]");
  for (const PlannedCall& p : plan) {
    EXPECT_EQ(p.count, 5u * 3u * 12u);
    EXPECT_FALSE(p.dtype.has_value());  // the storage dtype
    EXPECT_EQ(p.op, ReduceOp::sum);
  }
  EXPECT_EQ(config_violation(c, o.shape.dims).value_or(""),
            "number of attention heads 6 is not divisible by TP 4");
  EXPECT_THROW(parse(layer, {"-H", "12", "--heads", "5"}), UsageError);
  EXPECT_THROW(parse(layer, {"--causal", "2"}), UsageError);
}

TEST(VocabParallelPlan, EmbeddingInStorageDtypeCrossEntropyInFloat32) {
  auto layer = make("layer_vocab_parallel");
  const LayerOptions o = parse(layer, {"-S", "5", "-B", "1", "-H", "7", "-V", "30", "-d", "bfloat16"});
  const ParallelConfig c = layout(layer, o, 3);
  const std::vector<PlannedCall> plan = layer->plan(c, o.passes);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].count, 35u);
  EXPECT_FALSE(plan[0].dtype.has_value());
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(plan[i].count, 5u);
    EXPECT_EQ(plan[i].dtype, DataType::float32);
  }
  EXPECT_EQ(plan[1].op, ReduceOp::max);
  EXPECT_EQ(plan[2].op, ReduceOp::sum);
  EXPECT_EQ(plan[3].op, ReduceOp::sum);
  EXPECT_TRUE(layer->plan(c, {false, true}).empty());  // the backward moves nothing
  EXPECT_FALSE(config_violation(c, o.shape.dims).has_value());
  EXPECT_EQ(config_violation(layout(layer, o, 4), o.shape.dims).value_or(""),
            "vocabulary size 30 is not divisible by TP 4");
}

TEST(LayerOptions, Defaults) {
  auto layer = make("layer_tp_mlp");
  const LayerOptions o = parse(layer, {});
  EXPECT_EQ(o.storage, DataType::float32);
  EXPECT_TRUE(o.passes.forward && o.passes.backward);
  EXPECT_EQ(o.algorithm_names.at(Collective::allreduce), "ring");
  EXPECT_EQ(algorithms(layer, o).at(Collective::allreduce)->name, "ring");
  EXPECT_EQ(parse(layer, {"-d", "bfloat16"}).storage, DataType::bfloat16);
  EXPECT_EQ(parse(layer, {"-d", "float"}).storage, DataType::float32);
  EXPECT_TRUE(algorithms(layer, parse(layer, {"--allreduce-alg", "mpi"}))
                  .at(Collective::allreduce)
                  ->is_vendor());
}

TEST(LayerOptions, BadInputIsAUsageError) {
  auto layer = make("layer_tp_mlp");
  const std::vector<std::vector<const char*>> bad = {
      {"--pass", "sideways"}, {"-d", "int8"}, {"-d", "half"},   {"-n", "0"},
      {"-w", "-1"},           {"--format", "xml"}, {"-t", "pigeon"}, {"--bogus"},
      {"-H", "0"},            {"--tp", "-1"},      {"--timeout", "-1"}};
  for (const auto& args : bad) EXPECT_THROW(parse(layer, args), UsageError) << args[0];
  EXPECT_THROW(algorithms(layer, parse(layer, {"--allreduce-alg", "magic"})), UsageError);
}

// -m device: the shape flags left out take the device defaults, the ones given keep
// their values, and the storage dtype becomes bfloat16 unless -d says otherwise.
TEST(LayerOptions, DeviceDefaults) {
  auto layer = make("layer_tp_mlp");
  const LayerOptions o = parse(layer, {"-m", "device"});
  EXPECT_EQ(o.memory(), MemoryKind::device);
  EXPECT_EQ(o.storage, DataType::bfloat16);
  EXPECT_EQ(o.shape.json["S"], 4096);
  EXPECT_EQ(o.shape.json["B"], 1);
  EXPECT_EQ(o.shape.json["H"], 4096);
  EXPECT_EQ(o.shape.json["F"], 16384);
  const LayerOptions mine = parse(layer, {"-m", "device", "-S", "8", "-d", "float32"});
  EXPECT_EQ(mine.shape.json["S"], 8);
  EXPECT_EQ(mine.shape.json["H"], 4096);
  EXPECT_EQ(mine.storage, DataType::float32);
  EXPECT_EQ(parse(layer, {}).shape.json["S"], 8);  // host: the small defaults
  auto attention = make("layer_tp_attention");
  EXPECT_EQ(parse(attention, {"-m", "device"}).shape.json["heads"], 32);
}

TEST(LayerOptions, DeviceFlagsAreChecked) {
  auto layer = make("layer_tp_mlp");
  const std::vector<std::vector<const char*>> bad = {
      {"-m", "gpu"},  {"--path", "ipc"}, {"-m", "device", "--path", "wire"},
      {"--overlap"},  {"-t", "nccl"},    {"-m", "device", "-t", "nccl", "--path", "ipc"},
      {"--device-map", "0"}, {"-m", "device", "--device-map", "0,,1"},
      {"-m", "device", "--wait", "nap"}, {"-m", "device", "--path", "staged", "--no-fuse"}};
  for (const auto& args : bad) EXPECT_THROW(parse(layer, args), UsageError) << args.back();
  EXPECT_THROW(algorithms(layer, parse(layer, {"-m", "device", "--allreduce-alg", "mpi"})),
               UsageError);
  const LayerOptions o = parse(layer, {"-m", "device", "-t", "nccl", "--overlap"});
  EXPECT_TRUE(o.overlap);
  EXPECT_EQ(backend_spec(o).transport, TransportKind::nccl);
  EXPECT_EQ(backend_spec(o).memory, MemoryKind::device);
}

// --buckets: one allreduce per row block of dW, the blocks by the uneven rule.
TEST(DpGradPlan, BucketsSplitTheGradientsRows) {
  auto layer = make("layer_dp_grad");
  const LayerOptions o = parse(layer, {"-H", "7", "-K", "10", "--buckets", "3"});
  const std::vector<PlannedCall> plan = layer->plan(layout(layer, o, 2), o.passes);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].site, "bwd dW allreduce dW bucket 0/3 [H/N,O/TP]");
  EXPECT_EQ(plan[0].count, 3u * 10u);  // rows 3, 2, 2 of H = 7
  EXPECT_EQ(plan[1].count, 2u * 10u);
  EXPECT_EQ(plan[2].count, 2u * 10u);
  EXPECT_THROW(parse(layer, {"-H", "7", "--buckets", "8"}), UsageError);
  EXPECT_THROW(parse(layer, {"--buckets", "0"}), UsageError);
}

// --chunks: one count exchange for every chunk, then each chunk's dispatch before the
// previous chunk's combine.
TEST(MoePlan, ChunksPipelineDispatchAndCombine) {
  auto layer = make("layer_moe");
  const LayerOptions o = parse(layer, {"--experts", "4", "--chunks", "2"});
  const std::vector<PlannedCall> plan = layer->plan(layout(layer, o, 2), {true, false});
  std::vector<std::string> sites;
  for (const PlannedCall& c : plan) sites.push_back(c.site);
  EXPECT_EQ(sites, (std::vector<std::string>{
                       "fwd counts allgather tokens_per_expert [EP,C,E] int64",
                       "fwd dispatch alltoallv X rows chunk 0/2", "fwd dispatch alltoallv X rows chunk 1/2",
                       "fwd combine alltoallv O rows chunk 0/2", "fwd combine alltoallv O rows chunk 1/2"}));
  EXPECT_EQ(plan[0].count, 2u * 2u * 4u);  // EP x C x E
  ParallelConfig etp = layout(layer, parse(layer, {"--experts", "4", "--chunks", "2", "--etp", "2"}), 4);
  EXPECT_THROW(layer->plan(etp, {true, true}), UsageError);
}

}  // namespace
}  // namespace collscope::layers
