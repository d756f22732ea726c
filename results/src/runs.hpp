// RunAttributes <-> a record of the /runs table.
#pragma once

#include <cstdint>
#include <vector>

#include "collscope/results/run_attributes.hpp"
#include "record.hpp"

namespace collscope::results {

Record encode_run(const RunAttributes& run, std::int64_t run_id);
RunAttributes decode_run(const Record& r);  // a record of either version
// Its GPUs as records of /run_gpus (version 2), and back.
std::vector<Record> encode_run_gpus(const RunAttributes& run, std::int64_t run_id);
RunGpu decode_run_gpu(const Record& r);

}  // namespace collscope::results
