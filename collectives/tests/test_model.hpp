// The cost model the model tests build on (model_test.cpp's, with its inter-node link the
// same as within a node): alpha 2 us, achieved bandwidth 1e9 B/s, reduce 4e9 B/s,
// start_lat 5 us, sync_lat 3 us.
#pragma once

#include "collscope/model.hpp"

namespace collscope::test {

inline Model flat_model() {
  Model m;
  m.intra_node = {2e9, 0.5, 2e-6, 5e-6, 3e-6};
  m.inter_node = m.intra_node;
  m.reduce_rate = 4e9;
  return m;
}

}  // namespace collscope::test
