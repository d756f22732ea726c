// The schedule of every hand-written algorithm (algorithms.def), one per file in
// collectives/<collective>/<name>.cpp: collscope::schedules::<collective>_<name>.
#pragma once

#include <vector>

#include "collscope/p2p.hpp"
#include "collscope/schedule.hpp"

namespace collscope::schedules {

#define COLLSCOPE_ALGORITHM(collective, name, summary) Steps collective##_##name(Plan&);
#define COLLSCOPE_VENDOR(collective, library, summary)
#define COLLSCOPE_P2P(name, summary)                    \
  std::vector<P2pStep> p2p_##name##_steps(int nranks); \
  Steps p2p_##name(Plan&, const P2pStep&, const char* phase);
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR
#undef COLLSCOPE_P2P

}  // namespace collscope::schedules
