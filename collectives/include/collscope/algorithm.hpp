// The algorithm table: every collective algorithm, hand-written or vendor, with its
// theory function and its constraints. Benchmarks and tests look algorithms up here.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "collscope/comm.hpp"
#include "collscope/volume.hpp"

namespace collscope {

using RunFn = void (*)(Comm&, const CollArgs&);
// Exact volume of `rank` for this call; nullptr where theory is unknown (vendor).
using TheoryFn = RankVolume (*)(int rank, int nranks, const CollArgs&);
// Why the algorithm cannot run this call, or nullopt when it can.
using ConstraintFn = std::optional<std::string> (*)(int nranks, const CollArgs&);

struct Algorithm {
  std::string_view collective;  // "allreduce"
  std::string_view name;        // "ring"
  RunFn run = nullptr;
  TheoryFn theory = nullptr;
  ConstraintFn constraint = nullptr;
  bool vendor = false;          // runs the library's own collective: bytes not counted
  std::string_view summary;
};

std::span<const Algorithm> all_algorithms();
const Algorithm* find_algorithm(std::string_view collective, std::string_view name);

// Runs one call of `algo` through `comm`: sequence number, watchdog state, and the
// avg operator (reduced as sum, divided once at the end) handled here for all.
void run_collective(Comm& comm, const Algorithm& algo, const CollArgs& args);

// nccl-tests' bus bandwidth factor for a collective at N ranks.
double busbw_factor(std::string_view collective, int nranks);

}  // namespace collscope
