#include "collscope/layers/framework/layer.hpp"

#include "collscope/layers/compute/ops.hpp"
#include "collscope/layers/math/data.hpp"

namespace collscope::layers {

Array LayerContext::upload(const Tensor& t) { return ops::upload(engine(), t, storage_); }

Array LayerContext::replica_input(std::string_view name, std::size_t rows, std::size_t cols) {
  return upload(make_full(seed_, {name, replica()}, rows, cols, 1.0f, storage_));
}

void add_check(std::vector<TensorCheck>& checks, std::string_view tensor, const ErrorStats& e) {
  for (TensorCheck& c : checks)
    if (c.tensor == tensor) {
      c.error = worst_of(c.error, e);
      return;
    }
  checks.push_back({std::string(tensor), e});
}

std::vector<TensorCheck> checks_per_group(int world_rank, const ParallelConfig& c, GroupKind kind,
                                          const GroupCheck& check) {
  std::vector<TensorCheck> checks;
  if (world_rank != 0) return checks;
  for (const std::vector<int>& group : rank_groups(c, kind)) check(group, checks);
  return checks;
}

}  // namespace collscope::layers
