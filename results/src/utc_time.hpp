// The current time as ISO 8601 UTC: 2025-01-31T12:34:56Z.
#pragma once

#include <ctime>
#include <string>

namespace collscope::results {

inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace collscope::results
