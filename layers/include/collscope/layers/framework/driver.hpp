// The driver every layer binary shares: `int main(argc, argv) { const Pipeline& p =
// pipeline("layer_tp_mlp"); return layer_main(p.description, p.make(), argc, argv); }`.
//
//  1. Command line, layout and plan, checked on every rank alike before any message:
//     a bad flag or a broken constraint (world by TP x CP x PP, FFN by TP, ...) is one
//     line on stderr from rank 0 (`<program>: error: ...`) and exit code 2 on every rank.
//  2. The layer's groups, each a counted communicator (group_comm.hpp), and its shards.
//  3. A probe iteration (--pass; backward alone first runs an uncounted forward to have
//     the activations): every call site's bytes per rank are recorded and compared with
//     the exact theory of the chosen algorithm for the planned count, byte for byte; the
//     layer then verifies its outputs and gradients against its float64 reference.
//  4. -w warmup and -n timed iterations: after a barrier, each rank times the passes and
//     the time spent inside collective calls; an iteration's total, communication and
//     compute (total - communication) are each the maximum over ranks.
//  5. Rank 0 prints the table (or JSON lines) and writes -J FILE.
// Exit codes: 0 ok, 1 verification failed or measured bytes differ from theory, 2 usage
// or configuration error, 3 runtime error.
#pragma once

#include <memory>

#include "collscope/layers/framework/layer.hpp"

namespace collscope::layers {

// `description`: what `layer` is (pipelines/catalogue.hpp).
int layer_main(const LayerDescription& description, std::unique_ptr<Layer> layer, int argc,
               char** argv);

}  // namespace collscope::layers
