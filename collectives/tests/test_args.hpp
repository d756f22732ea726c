// The call arguments the pure schedule and theory tests (collectives_unit_test) build.
#pragma once

#include <cstddef>

#include "collscope/coll_args.hpp"

namespace collscope::test {

// `count` elements of `dtype`; the rest as CollArgs has them.
inline CollArgs args_of(std::size_t count, DataType dtype = DataType::float32) {
  CollArgs a;
  a.count = count;
  a.dtype = dtype;
  return a;
}

// A rooted call (broadcast, gather): `count` elements to or from `root`, pipelined
// algorithms in segments of `segment` bytes.
inline CollArgs rooted_args(std::size_t count, int root,
                            std::size_t segment = kDefaultSegmentBytes) {
  CollArgs a;
  a.count = count;
  a.root = root;
  a.segment_bytes = segment;
  return a;
}

}  // namespace collscope::test
