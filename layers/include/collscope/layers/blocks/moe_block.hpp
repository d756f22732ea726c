// The expert-parallel MoE block (layer_moe, and the MoE of layer_tp_sp_ep): router,
// permute, split-size exchange, dispatch all-to-all-v over EP, the local experts' FFNs
// (with ETP > 1: scheme allgather or scatter_gather), combine all-to-all-v, unpermute and
// the gate-weighted sum; backward through all of it and through the router. The math,
// the flows and the volume formulas are in moe_block.cpp's header; routing in
// moe_routing.hpp; the float64 reference the verification compares with in
// reference/moe_reference.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/framework/layer.hpp"
#include "collscope/layers/math/moe_routing.hpp"

namespace collscope::layers {

// How the experts of an expert group use its ETP ranks (ETP > 1): sharded over them
// (allgather-v of the rows, reduce-scatter-v of the outputs) or replicated on each, with
// the rows rebalanced (scatter / gather).
enum class EtpScheme { allgather, scatter_gather };
std::string_view etp_scheme_name(EtpScheme s);  // "allgather", "scatter_gather"

struct MoeConfig {
  std::int64_t experts = 4, topk = 2, ffn = 0 /* 0: 2 x H */;
  double capacity_factor = 0;
  RoutingMode routing = RoutingMode::learned;
  RouterOrder router_order = RouterOrder::softmax_topk;
  EtpScheme etp_scheme = EtpScheme::allgather;
  bool identity_experts = false;
};

// The MoE's flags as the command line binds them: the numbers straight into `config`,
// the names as given, read into config's enums by read_moe_flags.
struct MoeFlags {
  MoeConfig config;
  std::string routing = "learned", router_order = "softmax_topk", etp_scheme = "allgather";
};

// --experts --topk --moe-ffn --capacity-factor --routing --router-order --etp-scheme
// --identity-experts
void add_moe_options(CLI::App& app, MoeFlags& f);
// The config the flags give. Throws UsageError: experts >= 1, topk in 1..E, ffn >= 0,
// capacity factor >= 0, the names of routing, router order, ETP scheme.
MoeConfig read_moe_flags(const MoeFlags& f, std::int64_t hidden);

class MoeBlock {
 public:
  MoeBlock(const MoeConfig& c, std::size_t hidden, std::string site_prefix);

  // allgather (the counts), alltoallv (the rows), allreduce (replicated experts' gradients)
  static std::vector<Collective> collectives();
  std::vector<GroupKind> groups(const ParallelConfig& c) const;  // ep (+ etp when ETP > 1)
  // Throw UsageError when the layout does not fit (FFN by ETP under scheme allgather).
  std::vector<PlannedCall> forward_plan(const ParallelConfig& c, std::size_t tokens) const;
  std::vector<PlannedCall> backward_plan(const ParallelConfig& c, std::size_t tokens) const;

  void setup(LayerContext& ctx);                         // router and this rank's experts
  Tensor forward(LayerContext& ctx, const Tensor& x);    // [T, H] -> [T, H]; saves
  Tensor backward(LayerContext& ctx, const Tensor& dy);  // -> dX [T, H]; weight grads kept

  // Verification: collective over ctx.ctrl(); on rank 0, by world rank: the router, each
  // rank's local experts (rows stacked: W1 [local x H, f], W2 [local x f, H], f = this
  // rank's FFN columns), their gradients, each rank's dWr, and each rank's routing
  // [T, 2k] (the chosen experts, then the kept flags).
  struct Gathered {
    int ep = 1, etp = 1;
    std::vector<Tensor> wr, w1, w2, dwr, dw1, dw2, routing;
  };
  Gathered gather(LayerContext& ctx) const;

  // The world ranks of each EP x ETP expert group (replica), in group order.
  static std::vector<std::vector<int>> replicas(const ParallelConfig& c);

  const MoeConfig& config() const { return cfg_; }
  std::size_t ffn() const;
  std::size_t hidden() const { return h_; }

 private:
  void check_layout(const ParallelConfig& c) const;  // UsageError: F by ETP (scheme allgather)
  std::vector<std::size_t> group_rows(std::size_t p) const;  // rows at each ETP rank
  std::vector<Segment> group_segments(std::size_t p) const;
  void compute_experts(const Tensor& in, const std::vector<std::vector<RowSpan>>& spans,
                       DataType st, Tensor& out);
  void experts_backward(const Tensor& din, const std::vector<std::vector<RowSpan>>& spans,
                        DataType st, Tensor& dout);
  Tensor expert_stage_forward(LayerContext& ctx, const Tensor& recv);
  Tensor expert_stage_backward(LayerContext& ctx, const Tensor& drecv);
  std::string site(const std::string& s) const { return prefix_ + s; }
  bool sharded() const;    // scheme allgather with ETP > 1
  bool replicated() const; // scheme scatter_gather with ETP > 1

  MoeConfig cfg_;
  RouterSpec spec_;
  std::size_t h_;
  std::string prefix_;
  // Layout of this rank.
  int ep_ = 1, etp_ = 1, ep_pos_ = 0, etp_pos_ = 0;
  std::size_t local_ = 0, first_expert_ = 0, f_local_ = 0;
  // Weights.
  Tensor wr_;                           // [H, E], replicated
  std::vector<Tensor> w1_, w2_;         // local experts
  // Forward state.
  Tensor x_, logits_;                   // logits incl. bias, float32
  Routing routing_;
  std::vector<std::int64_t> counts_;    // [ETP x EP x E] kept assignments of the group
  std::vector<std::uint64_t> dispatch_splits_;
  std::vector<std::vector<RowSpan>> spans_;  // per local expert, in the compute window
  std::vector<Tensor> xe_;              // per local expert: its input rows
  std::vector<MlpSaved> saved_;
  Tensor o_;                            // combined expert outputs, permuted order
  // Backward.
  Tensor dwr_;
  std::vector<Tensor> dw1_, dw2_;
};

}  // namespace collscope::layers
