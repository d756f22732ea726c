// The binomial reduce's steps (binomial_steps.cpp), shared by reduce_binomial and
// reduce_pipelined.
#pragma once

#include "collscope/schedule.hpp"

namespace collscope::detail {

// The binomial tree reduce to args.root in segments of `seg_elems` elements.
Steps binomial_reduce_steps(Plan& p, std::size_t seg_elems);

}  // namespace collscope::detail
