#include "collscope/layers/pipelines/catalogue.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "collscope/layers/blocks/moe_block.hpp"
#include "collscope/layers/blocks/tp_to_sp_switch_block.hpp"

namespace collscope::layers {
namespace {

// `a`, then what `b` adds to it.
std::vector<Collective> union_of(std::vector<Collective> a, const std::vector<Collective>& b) {
  for (Collective c : b)
    if (std::find(a.begin(), a.end(), c) == a.end()) a.push_back(c);
  return a;
}

// One row a pipeline, in the order of mains/CMakeLists.txt.
std::vector<Pipeline> make_catalogue() {
  return {
      {{.program = "layer_tp_mlp",
        .name = "tp_mlp",
        .summary = "tensor-parallel MLP: column-parallel fc1 -> GeLU -> row-parallel fc2; "
                   "one allreduce [T,H] forward, one backward",
        .degrees = {.tp = true, .tp_defaults_to_world = true},
        .collectives = {Collective::allreduce},
        .groups = {GroupKind::tp}},
       make_tp_mlp},
      {{.program = "layer_dp_grad",
        .name = "dp_grad",
        .summary = "data-parallel gradient sync of a linear layer: allreduce SUM over DP, "
                   "then / DP",
        .degrees = {.tp = true},
        .collectives = {Collective::allreduce},
        .groups = {GroupKind::dp}},
       make_dp_grad},
      {{.program = "layer_tp_attention",
        .name = "tp_attention",
        .summary = "tensor-parallel self-attention: column-parallel QKV (heads split over "
                   "TP) -> softmax per head -> row-parallel output projection; one "
                   "allreduce [T,H] forward, one backward",
        .degrees = {.tp = true, .tp_defaults_to_world = true},
        .collectives = {Collective::allreduce},
        .groups = {GroupKind::tp}},
       make_tp_attention},
      {{.program = "layer_vocab_parallel",
        .name = "vocab_parallel",
        .summary = "vocab-parallel embedding (masked lookup, allreduce [T,H]) and "
                   "vocab-parallel cross-entropy on the tied table (MAX, target-logit and "
                   "sum-exp allreduces of [T] in float32)",
        .degrees = {.tp = true, .tp_defaults_to_world = true},
        .collectives = {Collective::allreduce},
        .groups = {GroupKind::tp}},
       make_vocab_parallel},
      {{.program = "layer_tp_sp",
        .name = "tp_sp",
        .summary = "one transformer layer under Megatron TP + sequence parallelism: "
                   "LayerNorm on T/N tokens, allgather before and reduce-scatter after the "
                   "attention and MLP blocks (4 forward, 4 backward), LayerNorm weight "
                   "gradients allreduced over TP",
        .degrees = {.tp = true, .tp_defaults_to_world = true},
        .sequence_parallel = true,
        .collectives = {Collective::allgather, Collective::reduce_scatter,
                        Collective::allreduce},
        .groups = {GroupKind::tp}},
       make_tp_sp},
      {{.program = "layer_tp_to_sp",
        .name = "tp_to_sp",
        .summary = "the TP -> SP output projection Z = Y W, Y H-sharded in, Z "
                   "sequence-sharded out: --scheme allreduce (row-parallel W, allreduce + "
                   "slice), reduce_scatter, or alltoall (all-to-all Y, replicated W)",
        .degrees = {.tp = true, .tp_defaults_to_world = true},
        .sequence_parallel = true,
        .collectives = TpToSpBlock::collectives(),
        .groups = {GroupKind::tp}},
       make_tp_to_sp},
      {{.program = "layer_moe",
        .name = "moe",
        .summary = "expert-parallel MoE: router top-k, dispatch all-to-all-v over EP, local "
                   "expert FFNs (ETP schemes allgather / scatter_gather), combine "
                   "all-to-all-v",
        .degrees = {.ep = true, .etp = true},
        .collectives = MoeBlock::collectives(),
        .groups = {GroupKind::ep, GroupKind::etp}},
       make_moe},
      {{.program = "layer_tp_sp_ep",
        .name = "tp_sp_ep",
        .summary = "TP -> SP -> EP layer flow: column-parallel QKV -> attention -> TP->SP "
                   "(--scheme) -> sequence-sharded EP MoE, forward and backward",
        .degrees = {.tp = true, .tp_defaults_to_world = true, .ep = true},
        .sequence_parallel = true,
        .collectives = union_of(union_of({Collective::allreduce}, TpToSpBlock::collectives()),
                                MoeBlock::collectives()),
        .groups = {GroupKind::tp, GroupKind::ep}},
       make_tp_sp_ep},
  };
}

}  // namespace

const std::vector<Pipeline>& pipelines() {
  static const std::vector<Pipeline> catalogue = make_catalogue();
  return catalogue;
}

const Pipeline& pipeline(std::string_view program) {
  for (const Pipeline& p : pipelines())
    if (p.description.program == program) return p;
  throw std::invalid_argument("no layer pipeline " + std::string(program));
}

}  // namespace collscope::layers
