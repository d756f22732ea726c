// What Megatron-LM's two tensor-parallel blocks (MLP, attention; Shoeybi et al. 2019)
// share: a column-parallel input projection and a row-parallel output projection, so one
// allreduce of [T,H] forward (the output's partial sums) and one backward (the input's
// gradient), and the textbook count of them, 2 Phi per allreduce (Phi = b x s x h
// elements; docs/textbook-formulas.md, tp-mlp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collscope/layers/framework/layer.hpp"

namespace collscope::layers {

// The block's call sites: forward_site when p.forward, backward_site when p.backward,
// each an allreduce SUM of `tokens_x_hidden` elements in the storage dtype on TP.
std::vector<PlannedCall> tp_block_plan(std::size_t tokens_x_hidden, Passes p,
                                       const std::string& forward_site,
                                       const std::string& backward_site);

// The textbook figure for the block (`anchor`: its section of docs/textbook-formulas.md,
// "tp-mlp" or "tp-attention"; `block`: "MLP", "attention"), with why the exact figure is
// (TP-1)/TP of it; `note` ends the explanation.
TextbookFigure tp_block_textbook_figure(std::size_t tokens_x_hidden, int tp, Passes p,
                                        DataType storage, const std::string& anchor,
                                        const std::string& block, const std::string& note);

}  // namespace collscope::layers
