#include "collscope/program/faults.hpp"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "collscope/errors.hpp"

namespace collscope::program {

void stall_if_asked(int rank) {
  static bool stalled = false;
  const char* env = std::getenv("COLLSCOPE_DEBUG_STALL");
  int who = -1;
  double seconds = 0;
  if (stalled || !env || std::sscanf(env, "%d:%lf", &who, &seconds) != 2 || who != rank) return;
  stalled = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

double slowdown_factor() {
  const char* env = std::getenv("COLLSCOPE_DEBUG_SLOWDOWN");
  if (!env || !*env) return 1;
  char* end = nullptr;
  const double f = std::strtod(env, &end);
  if (*end != '\0' || !(f >= 1 && f <= 1000))
    throw UsageError("COLLSCOPE_DEBUG_SLOWDOWN must be a factor from 1 to 1000, got '" +
                     std::string(env) + "'");
  return f;
}

void stretch_since(std::chrono::steady_clock::time_point t0, double factor) {
  if (factor <= 1) return;
  const auto until = t0 + (std::chrono::steady_clock::now() - t0) * factor;
  // Yielding while it waits: a rank that held its core here would, on a loaded machine,
  // keep its peers (and the next call's partners) from running, and stretch far more
  // than the factor. Alone on a core, sched_yield returns at once.
  while (std::chrono::steady_clock::now() < until) sched_yield();
}

}  // namespace collscope::program
