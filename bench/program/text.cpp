#include "collscope/program/text.hpp"

#include <cstdio>

namespace collscope::program {

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

double gbps(double bytes, double us) { return us > 0 ? bytes / (us * 1e3) : 0; }

}  // namespace collscope::program
