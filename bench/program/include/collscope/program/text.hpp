// Number formatting for the tables every program prints.
#pragma once

#include <string>

namespace collscope::program {

// printf-style formatting of one number: fmt("%.2f", 1.234) == "1.23".
std::string fmt(const char* format, double value);
// GB/s (GB = 1e9 bytes) of `bytes` moved in `us` microseconds; 0 when us is 0.
double gbps(double bytes, double us);

}  // namespace collscope::program
