// The layer pipelines, one file each (layers/pipelines/<name>.cpp; layer_tp_sp's is
// tp_sp_transformer_layer.cpp, layer_tp_to_sp's tp_to_sp_switch.cpp), one binary each
// (layers/mains/). What each one is (its LayerDescription) stands in one table,
// catalogue.cpp, beside the factory that makes it.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "collscope/layers/framework/layer.hpp"

namespace collscope::layers {

std::unique_ptr<Layer> make_tp_mlp();   // layer_tp_mlp
std::unique_ptr<Layer> make_dp_grad();  // layer_dp_grad
std::unique_ptr<Layer> make_tp_attention();  // layer_tp_attention
std::unique_ptr<Layer> make_vocab_parallel();  // layer_vocab_parallel
std::unique_ptr<Layer> make_tp_sp();           // layer_tp_sp
std::unique_ptr<Layer> make_tp_to_sp();        // layer_tp_to_sp
std::unique_ptr<Layer> make_moe();             // layer_moe
std::unique_ptr<Layer> make_tp_sp_ep();  // layer_tp_sp_ep

struct Pipeline {
  LayerDescription description;
  std::unique_ptr<Layer> (*make)();
};

// Every pipeline, in the order of mains/CMakeLists.txt.
const std::vector<Pipeline>& pipelines();
// The pipeline whose program is `program` ("layer_tp_mlp"); std::invalid_argument if none.
const Pipeline& pipeline(std::string_view program);

}  // namespace collscope::layers
