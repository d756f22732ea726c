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
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/layers/blocks/tp_local.hpp"
#include "collscope/layers/compute/array.hpp"
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
  // The tokens in `chunks` pipelined chunks (--chunks, ETP 1): each has its own
  // dispatch, expert FFN and combine, so under --overlap chunk c+1's dispatch runs beside
  // chunk c's experts (and backward the same for the gradients).
  std::int64_t chunks = 1;
};

// The MoE's flags as the command line binds them: the numbers straight into `config`,
// the names as given, read into config's enums by read_moe_flags.
struct MoeFlags {
  MoeConfig config;
  std::string routing = "learned", router_order = "softmax_topk", etp_scheme = "allgather";
};

// --experts --topk --moe-ffn --capacity-factor --routing --router-order --etp-scheme
// --identity-experts --chunks
void add_moe_options(CLI::App& app, MoeFlags& f);
// The config the flags give. Throws UsageError: experts >= 1, topk in 1..E, ffn >= 0,
// capacity factor >= 0, the names of routing, router order, ETP scheme, chunks >= 1.
MoeConfig read_moe_flags(const MoeFlags& f, std::int64_t hidden);

class MoeBlock {
 public:
  MoeBlock(const MoeConfig& c, std::size_t hidden, std::string site_prefix);

  // allgather (the counts), alltoallv (the rows), allreduce (replicated experts' gradients)
  static std::vector<Collective> collectives();
  std::vector<GroupKind> groups(const ParallelConfig& c) const;  // ep (+ etp when ETP > 1)
  // Throw UsageError when the layout does not fit (FFN by ETP under scheme allgather;
  // chunks under ETP > 1, or more chunks than tokens).
  std::vector<PlannedCall> forward_plan(const ParallelConfig& c, std::size_t tokens) const;
  std::vector<PlannedCall> backward_plan(const ParallelConfig& c, std::size_t tokens) const;

  void setup(LayerContext& ctx);                       // router and this rank's experts
  Array forward(LayerContext& ctx, const Array& x);    // [T, H] -> [T, H]; saves
  Array backward(LayerContext& ctx, const Array& dy);  // -> dX [T, H]; weight grads kept

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
  // One chunk of the tokens (all of them without --chunks) on its way through the
  // experts: its routing's permutation, its split matrix, what its experts kept.
  struct Chunk {
    std::size_t t0 = 0, tokens = 0;           // its tokens [t0, t0 + tokens)
    std::vector<std::int64_t> counts;         // the group's [ETP x EP x E] kept assignments
    std::vector<std::uint64_t> splits;        // dispatch split matrix (EP x EP, x H)
    std::size_t sent = 0, received = 0;       // rows this rank dispatches / its experts get
    Array order, slot_row;                    // [sent] slots by expert; [tokens k] slot's row
    std::vector<std::vector<RowSpan>> spans;  // per local expert, in the compute window
    std::vector<Array> xe;                    // per local expert: its input rows
    std::vector<MlpSaved> saved;
    Array o;                                  // combined expert outputs [sent, H]
  };

  void check_layout(const ParallelConfig& c, std::size_t tokens) const;
  std::size_t chunks() const { return static_cast<std::size_t>(cfg_.chunks); }
  std::string chunk_site(const char* s, std::size_t c) const;
  std::vector<std::size_t> group_rows(const Chunk& ch) const;  // rows at each ETP rank
  std::vector<Segment> group_segments(const Chunk& ch) const;
  // Routing (every token), the count exchange, each chunk's permutation and splits.
  void route(LayerContext& ctx, const Array& x);
  void exchange_counts(LayerContext& ctx);
  void plan_chunk(LayerContext& ctx, Chunk& ch);
  Array dispatch_rows(const Array& x, const Chunk& ch) const;
  Array gradient_rows(const Array& dy, const Chunk& ch, DataType st) const;
  void compute_experts(Chunk& ch, const Array& in, DataType st, Array& out);
  void experts_backward(Chunk& ch, const Array& din, DataType st, Array& dout);
  // The experts' compute between the ETP calls of the scheme (none, allgather or
  // scatter_gather), forward or backward: `compute(in, first, end, out)` on the rows this
  // rank computes, [first, end) of its ETP group's gathered rows.
  struct EtpSites {
    const char *gather, *reduce, *scatter, *collect;
  };
  using ExpertCompute =
      std::function<void(const Array& in, std::size_t first, std::size_t end, Array& out)>;
  Array expert_stage(LayerContext& ctx, const Chunk& ch, const Array& in, const EtpSites& sites,
                     const ExpertCompute& compute);
  Array expert_stage_forward(LayerContext& ctx, Chunk& ch, const Array& recv);
  Array expert_stage_backward(LayerContext& ctx, Chunk& ch, const Array& drecv);
  void sum_replicated_grads(LayerContext& ctx);
  void finish_weight_grads(DataType st);
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
  Array wr_;                        // [H, E], replicated
  std::vector<Array> w1_, w2_;      // local experts
  // Forward state.
  Array x_, logits_;                // logits incl. bias, float32
  Array expert_, gate_, kept_;      // [T k]: chosen expert, gate, kept by the capacity
  std::vector<std::int64_t> my_counts_;  // [chunks x E] this rank's kept per expert
  std::vector<Chunk> chunks_;
  // Backward.
  Array dwr_;
  std::vector<Array> dw1_, dw2_;    // storage dtype, once backward is done
  std::vector<Array> dw1_acc_, dw2_acc_;  // float32 sums over the chunks
};

}  // namespace collscope::layers
