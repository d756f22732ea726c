#include "collscope/layers/layer.hpp"

namespace collscope::layers {

void add_check(std::vector<TensorCheck>& checks, std::string_view tensor, const ErrorStats& e) {
  for (TensorCheck& c : checks)
    if (c.tensor == tensor) {
      c.error = worst_of(c.error, e);
      return;
    }
  checks.push_back({std::string(tensor), e});
}

}  // namespace collscope::layers
