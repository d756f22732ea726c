// Number formatting for the tables every program prints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace collscope::program {

// printf-style formatting of one number: fmt("%.2f", 1.234) == "1.23".
std::string fmt(const char* format, double value);
// GB/s (GB = 1e9 bytes) of `bytes` moved in `us` microseconds; 0 when us is 0.
double gbps(double bytes, double us);
// A row's spread for the tables' short column: "7%", "31%!" when noisy, "-" when unknown.
std::string spread_text(double spread, bool noisy);
// Each warning on stderr, one line: "<program>: warning: <text>".
void print_warnings(std::string_view program, const std::vector<std::string>& warnings);

}  // namespace collscope::program
