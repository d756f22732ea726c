// RunAttributes <-> a record of the /runs table.
#pragma once

#include <cstdint>

#include "collscope/results/run_attributes.hpp"
#include "record.hpp"

namespace collscope::results {

Record encode_run(const RunAttributes& run, std::int64_t run_id);
RunAttributes decode_run(const Record& r);

}  // namespace collscope::results
