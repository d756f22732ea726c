// The algorithm table: every collective algorithm, hand-written or vendor, as
// algorithms.def lists them, with its schedule or vendor call and its theory.
// Benchmarks, layers and tests look algorithms up here and run them with
// run_collective().
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/collective.hpp"
#include "collscope/comm.hpp"
#include "collscope/theory.hpp"

namespace collscope {

using ScheduleFn = Steps (*)(Plan&);

struct Algorithm {
  Collective collective;
  std::string_view name;               // "ring"; a vendor's library: "mpi"
  ScheduleFn schedule = nullptr;       // hand-written algorithms
  const VendorCall* vendor = nullptr;  // the library's own collective
  TheoryFn theory = nullptr;           // hand-written algorithms
  std::string_view summary;

  const CollectiveInfo& info() const { return collective_info(collective); }
  std::string_view collective_name() const { return info().name; }
  bool is_vendor() const { return vendor != nullptr; }
  // Runs on GPU memory only: host runs (the layers, host memory tests) leave it out.
  bool needs_device() const { return vendor != nullptr && vendor->device_only; }
  std::string full_name() const;  // "allreduce_ring"
};

std::span<const Algorithm> all_algorithms();
// By name, for the command line; nullptr if there is none.
const Algorithm* find_algorithm(std::string_view collective, std::string_view name);
const Algorithm* find_algorithm(Collective collective, std::string_view name);

// This rank's plan of a call: its view of the buffers, in place or not (from args'
// pointers through the collective's layout).
Plan make_plan(const Algorithm& algo, int rank, int nranks, const CollArgs& args);
// The same from an explicit in-place flag (no buffers needed: tests, the time model).
Plan make_plan(const Algorithm& algo, int rank, int nranks, const CollArgs& args, bool in_place);
// The schedule of a hand-written algorithm for `plan`; with avg, reduced as sum and
// divided by N at the end (plan must come from make_plan of the avg call).
Steps schedule_of(const Algorithm& algo, Plan& plan);

// Why this call cannot run, identically on every rank (the vendor's limits, a missing
// split matrix, scratch above args.scratch_limit on any rank), or nullopt.
std::optional<std::string> call_problem(const Algorithm& algo, int nranks, const CollArgs& args,
                                        bool in_place);
// The most scratch any rank of a hand-written algorithm declares for this call.
std::size_t max_scratch_bytes(const Algorithm& algo, int nranks, const CollArgs& args,
                              bool in_place);

// The planned volume of `rank` per peer: the schedule's messages counted without
// running anything.
std::vector<RankVolume> planned_volume(const Algorithm& algo, int rank, int nranks,
                                       const CollArgs& args, bool in_place);

// The bytes of `rank`'s receives that a reduction consumes at once
// (consumed_receives.hpp): what the ipc path reduces in the sender's memory.
std::uint64_t planned_consumed_bytes(const Algorithm& algo, int rank, int nranks,
                                     const CollArgs& args, bool in_place);

// Runs one call of `algo` on `comm`: a fresh tag sequence, the watchdog's state, and
// the avg operator (reduced as sum, divided once at the end). On a device executor the
// call is complete after comm.executor().synchronize().
void run_collective(Comm& comm, const Algorithm& algo, const CollArgs& args);

}  // namespace collscope
