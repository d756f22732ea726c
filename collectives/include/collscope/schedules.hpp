// The schedule of every hand-written algorithm (algorithms.def), one per file in
// collectives/<collective>/<name>.cpp: collscope::schedules::<collective>_<name>.
#pragma once

#include "collscope/schedule.hpp"

namespace collscope::schedules {

#define COLLSCOPE_ALGORITHM(collective, name, summary) Steps collective##_##name(Plan&);
#define COLLSCOPE_VENDOR(collective, library, summary)
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR

}  // namespace collscope::schedules
