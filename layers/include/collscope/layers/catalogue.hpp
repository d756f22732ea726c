// The layer pipelines, one file each (layers/src/<name>.cpp), one binary each.
#pragma once

#include <memory>

#include "collscope/layers/layer.hpp"

namespace collscope::layers {

std::unique_ptr<Layer> make_tp_mlp();   // layer_tp_mlp
std::unique_ptr<Layer> make_dp_grad();  // layer_dp_grad

}  // namespace collscope::layers
