// The plan and the ring step the sequencer's and the executor sink's tests both issue.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collscope/coll_args.hpp"
#include "collscope/schedule.hpp"

namespace collscope::test {

// Rank 0 of 4, `count` floats.
inline Plan plan_of(std::size_t count = 64) {
  CollArgs a;
  a.count = count;
  return Plan(0, 4, a, {});
}

// A ring step's operations: 16 bytes to rank 1 from the send buffer, 16 from rank 3 into
// `box`, then what arrived reduced into the receive buffer.
inline StepBuilder& ring_ops(StepBuilder& s, BufRef box, std::uint32_t tag) {
  return s.send(1, Plan::send(0), 16, tag)
      .recv(3, box, 16, tag)
      .reduce(Plan::recv(16), Plan::send(16), box, 16);
}

}  // namespace collscope::test
