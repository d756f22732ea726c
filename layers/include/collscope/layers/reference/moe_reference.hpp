// The float64 reference of the expert-parallel MoE block (blocks/moe_block.hpp) on the
// gathered, unsharded data of one expert group, and the checks of the run against it
// (layer_moe, and the MoE of layer_tp_sp_ep).
#pragma once

#include <cstddef>
#include <vector>

#include "collscope/layers/blocks/moe_block.hpp"
#include "collscope/layers/framework/layer.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

struct MoeReference {
  RefTensor y, dx;  // per rank: T rows each, rank after rank, for one replica
  RefTensor drouter;
  std::vector<RefTensor> dw1, dw2;  // per expert, whole
  std::size_t choice_mismatches = 0;  // tokens whose choice differs beyond a near tie
  double choice_threshold = 0;
};
// The float64 MoE of `block` over the ranks `replica` (one EP x ETP expert group, world
// ranks in group order: etp + ETP x ep) given their X and dY (float64, one per rank, in
// the order of `replica`), with the run's routing (chosen experts and kept mask).
MoeReference moe_reference(const MoeBlock& block, const MoeBlock::Gathered& g,
                           const std::vector<int>& replica, const std::vector<RefTensor>& x,
                           const std::vector<RefTensor>& dy, DataType storage = DataType::float32);
// Adds the weight-gradient checks (dWr summed over the replica, dW1, dW2) of one
// replica to `checks`.
void moe_check_weights(const MoeBlock& block, const MoeBlock::Gathered& g,
                       const std::vector<int>& replica, const MoeReference& ref, DataType st,
                       std::vector<TensorCheck>& checks);
// Adds the "routing choice" check: tokens whose run choice differs from float64's
// beyond a near tie (must be 0).
void moe_check_routing(const MoeReference& ref, std::vector<TensorCheck>& checks);

}  // namespace collscope::layers
