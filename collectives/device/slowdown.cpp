#include "slowdown.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>


namespace collscope::device {
namespace {

enum Part : unsigned { memory = 1, pcie = 2, peer = 4, every = 7 };

struct Plant {
  int rank = -1;  // -1: no plant
  double factor = 1.0;
  unsigned parts = every;
  std::string problem;  // a malformed value: why
};

Plant parse(const char* text) {
  Plant p;
  p.problem = std::string("COLLSCOPE_DEVICE_SLOWDOWN must be RANK:FACTOR[:memory|pcie|peer] "
                          "(factor 1 to 1000), got '") + text + "'";
  int rank = -1, used = 0;
  double factor = 0;
  if (std::sscanf(text, "%d:%lf%n", &rank, &factor, &used) != 2 || rank < 0 || !(factor >= 1.0) ||
      factor > 1000.0)
    return p;
  const char* rest = text + used;
  if (*rest == ':') {
    const std::string what = rest + 1;
    if (what == "memory") p.parts = memory;
    else if (what == "pcie") p.parts = pcie;
    else if (what == "peer") p.parts = peer;
    else return p;
  } else if (*rest != '\0') {
    return p;
  }
  p.rank = rank;
  p.factor = factor;
  p.problem.clear();
  return p;
}

const Plant& plant() {
  static const Plant p = [] {
    const char* env = std::getenv("COLLSCOPE_DEVICE_SLOWDOWN");
    return env && *env ? parse(env) : Plant{};
  }();
  return p;
}

// This process's rank in MPI_COMM_WORLD, or 0 outside MPI.
int world_rank() {
  int up = 0, down = 0, rank = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (up && !down) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

unsigned part_of(const Runtime& rt, CopyKind kind, const void* dst, const void* src) {
  if (kind != CopyKind::device_to_device) return pcie;
  return rt.owns(dst) && rt.owns(src) ? memory : peer;
}

}  // namespace

std::string slowdown_problem() { return plant().problem; }

double slowdown_factor(const Runtime& rt, CopyKind kind, const void* dst, const void* src) {
  const Plant& p = plant();
  if (p.rank < 0 || p.rank != world_rank()) return 1.0;
  return (p.parts & part_of(rt, kind, dst, src)) ? p.factor : 1.0;
}

long long steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void sleep_for_slowdown(double factor, long long start_ns) {
  if (factor <= 1.0) return;
  const double took = static_cast<double>(steady_now_ns() - start_ns);
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<long long>((factor - 1.0) * took)));
}

}  // namespace collscope::device
