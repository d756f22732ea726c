// What a layer pipeline gives the shared driver (driver.hpp), and what it gets from it.
//
// A layer is described once (LayerDescription: its program, the parallel degrees it
// takes, the collectives and groups it uses; the pipelines' stand in pipelines/
// catalogue.cpp). It binds its shape flags, reads them into a LayerShape, and plans every
// collective call site of the forward and the backward pass with its element count,
// written from its shapes. The driver checks the layout and the
// plan before any communication, runs the passes through CollectiveCalls (counted), asks
// the layer to verify itself against its float64 reference, and compares each site's
// measured bytes with the exact theory of the chosen algorithm for the planned count.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/collective.hpp"
#include "collscope/layers/framework/collective_calls.hpp"
#include "collscope/layers/framework/groups.hpp"
#include "collscope/layers/math/compare.hpp"

namespace collscope::layers {

// --pass forward|backward|both
struct Passes {
  bool forward = true, backward = true;
  std::string_view name() const { return forward && backward ? "both" : forward ? "forward" : "backward"; }
};

struct PlannedCall {
  std::string site;        // "fwd fc2 allreduce Y [T,H]"
  Collective collective = Collective::allreduce;
  GroupKind group = GroupKind::tp;
  std::size_t count = 0;   // elements of the call (CollArgs::count)
  std::optional<DataType> dtype;  // what travels; unset: the storage dtype
  ReduceOp op = ReduceOp::sum;
  int root = 0;            // rooted collectives (broadcast, scatter, gather): group rank
  // alltoallv: count 0; its split matrix depends on the data (what the router sends
  // where), so the driver takes each rank's matrix from the call it made, checks that a
  // group's ranks agree, and computes the exact theory from it.
};

// A call site in the storage dtype (`dtype` unset) or its own.
inline PlannedCall planned_call(std::string site, Collective collective, GroupKind group,
                                std::size_t count, std::optional<DataType> dtype = {},
                                ReduceOp op = ReduceOp::sum) {
  return PlannedCall{.site = std::move(site), .collective = collective, .group = group,
                     .count = count, .dtype = dtype, .op = op};
}

// One verified tensor, over every rank and replica holding it.
struct TensorCheck {
  std::string tensor;  // "Y", "dX", "dW1"
  ErrorStats error;
};

// Adds a comparison to the check of its tensor (the worst over ranks and replicas).
void add_check(std::vector<TensorCheck>& checks, std::string_view tensor, const ErrorStats& e);

// On world rank 0: the checks `check(group, checks)` adds for every group of a kind (a
// layer's replicas: each TP group, each DP group); elsewhere none.
using GroupCheck = std::function<void(const std::vector<int>& group, std::vector<TensorCheck>&)>;
std::vector<TensorCheck> checks_per_group(int world_rank, const ParallelConfig& c, GroupKind kind,
                                          const GroupCheck& check);

// The textbook figure for the layer's communication (docs/textbook-formulas.md, "Layer
// pipelines"), beside the exact one.
struct TextbookFigure {
  std::string source;       // "Shoeybi et al. 2019 (Megatron-LM), section 3 (...)"
  std::string formula;      // "4 Phi, Phi = b x s x h"
  double elements = 0;      // the figure's number, in its own unit (elements)
  double bytes = 0;         // that number x the element size
  std::string explanation;  // why it differs from the exact figure
};

// Parallel degree flags a layer takes (--tp ...); the rest stay 1.
struct DegreeFlags {
  bool tp = false;
  bool tp_defaults_to_world = false;  // --tp unset: every rank in one TP group
  bool ep = false;                    // --ep (unset: every rank in one EP group)
  bool etp = false;                   // --etp (default 1)
};

// What a layer is, fixed before its flags are read: the command line, the groups the
// driver builds and the record's identity come from it.
struct LayerDescription {
  std::string_view program;  // "layer_tp_mlp"
  std::string_view name;     // "tp_mlp", the record's "layer"
  std::string_view summary;  // one line for --help
  DegreeFlags degrees;
  bool sequence_parallel = false;       // the record's "sp"; the sequence length divides by TP
  std::vector<Collective> collectives;  // one --<collective>-alg flag each
  std::vector<GroupKind> groups;        // the counted communicators the layer calls on
};

// What a layer's flags make of it, once read.
struct LayerShape {
  std::string scheme;           // the record's "scheme": "tp", "ep", or a --scheme's value
  ModelDims dims;               // the sizes that must divide by the parallel degrees
  nlohmann::ordered_json json;  // the record's "shape"
};

class LayerContext {
 public:
  LayerContext(const ParallelConfig& config, int world_rank, DataType storage,
               std::uint64_t seed, CollectiveCalls& calls, MPI_Comm ctrl)
      : config_(config), world_rank_(world_rank), storage_(storage), seed_(seed),
        calls_(calls), ctrl_(ctrl) {}

  // Where the layer's arrays live and its math runs (host or device).
  Engine& engine() { return calls_.engine(); }
  bool on_device() { return engine().memory() == MemoryKind::device; }

  const ParallelConfig& config() const { return config_; }
  int world_rank() const { return world_rank_; }
  DataType storage() const { return storage_; }
  std::uint64_t seed() const { return seed_; }
  CollectiveCalls& calls() { return calls_; }
  // This rank's place in a group (pure: groups.hpp).
  GroupPosition position(GroupKind k) const { return group_of(config_, k, world_rank_); }
  // This rank's DP replica: a layer's inputs are the same on every rank of one.
  int replica() const { return position(GroupKind::dp).position; }

  // `t` in the engine's memory, in the storage dtype.
  Array upload(const Tensor& t);
  // The generated input `name` [rows, cols] of this rank's replica (math/data.hpp's
  // make_full, scale 1), uploaded.
  Array replica_input(std::string_view name, std::size_t rows, std::size_t cols);
  // For verification only (gathers to rank 0): never counted.
  MPI_Comm ctrl() const { return ctrl_; }

 private:
  const ParallelConfig& config_;
  int world_rank_;
  DataType storage_;
  std::uint64_t seed_;
  CollectiveCalls& calls_;
  MPI_Comm ctrl_;
};

class Layer {
 public:
  virtual ~Layer() = default;

  // Shape flags, bound to the layer's own fields.
  virtual void add_options(CLI::App& app) = 0;
  // -m device: each shape flag the command line left out (app.count(flag) == 0) takes
  // the layer's device default, a shape worth a GPU. Called before read_options().
  virtual void use_device_defaults(const CLI::App& app) = 0;
  // Once the command line is parsed: checks the flags alone (positive sizes, scheme
  // names: UsageError, one line), reads names into the layer's enums, and returns what
  // the flags make of the layer.
  virtual LayerShape read_options() = 0;

  virtual std::vector<PlannedCall> plan(const ParallelConfig& c, Passes p) const = 0;
  virtual TextbookFigure textbook_figure(const ParallelConfig& c, Passes p,
                                         DataType storage) const = 0;

  // Generates this rank's shards of the inputs and weights.
  virtual void setup(LayerContext& ctx) = 0;
  virtual void forward(LayerContext& ctx) = 0;
  // Reads what forward saved; never changes it, so it can run again and again.
  virtual void backward(LayerContext& ctx) = 0;
  // Collective over ctx.ctrl(): gathers the shards to rank 0 and compares them there
  // with the float64 reference; the checks on rank 0, nothing elsewhere.
  virtual std::vector<TensorCheck> verify(LayerContext& ctx, Passes p) = 0;
};

}  // namespace collscope::layers
