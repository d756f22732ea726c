#include "collscope/program/text.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace collscope::program {

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

double gbps(double bytes, double us) { return us > 0 ? bytes / (us * 1e3) : 0; }

std::string spread_text(double spread, bool noisy) {
  if (std::isnan(spread)) return "-";
  return fmt("%.0f%%", spread * 100) + (noisy ? "!" : "");
}

}  // namespace collscope::program

namespace collscope::program {

void print_warnings(std::string_view program, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << program << ": warning: " << w << "\n";
  std::cerr << std::flush;
}

}  // namespace collscope::program
