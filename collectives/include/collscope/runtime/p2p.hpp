// The point-to-point patterns of the catalogue (algorithms.def's COLLSCOPE_P2P lines) as a
// table, beside the algorithms' (algorithm.hpp): each with its steps, its schedule and
// its theory, and the call that runs one rank's part of one step, watched and counted as
// a collective's call is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "collscope/comm.hpp"
#include "collscope/p2p.hpp"
#include "collscope/volume.hpp"

namespace collscope {

struct P2pEntry {
  P2pPattern pattern;
  std::string_view name;  // "rounds": pingpong --pattern rounds
  // The steps at N ranks, in the order they run (pairs: every a < b).
  std::vector<P2pStep> (*steps)(int nranks);
  // One rank's part of one step; `phase` (probe, warmup, timed) is for the watchdog.
  Steps (*schedule)(Plan&, const P2pStep&, const char* phase);
  // The step's exact N x N volume (theory.hpp).
  std::vector<RankVolume> (*theory)(const P2pStep&, std::uint64_t bytes, int nranks);
  std::string_view summary;
};

// In algorithms.def's order, which is P2pPattern's.
std::span<const P2pEntry> all_p2p_patterns();
const P2pEntry& p2p_entry(P2pPattern p);
// By name, for the command line; nullopt if there is none.
std::optional<P2pPattern> p2p_by_name(std::string_view name);

// The plan of one step: `bytes` as uint8 elements, the send buffer the payload and the
// receive buffer where the peer's message lands.
Plan p2p_plan(int rank, int nranks, std::size_t bytes);

// The volume `rank`'s schedule of `step` plans per peer, counted without running it.
std::vector<RankVolume> planned_volume(const P2pEntry& e, const P2pStep& step, int rank,
                                       int nranks, std::size_t bytes);

// Runs one rank's part of one step, made beforehand (so that a timer around this call
// times the messages, not the schedule's setup): a fresh tag sequence and the watchdog's
// state, as run_collective. On a device executor the call is complete after
// comm.executor().synchronize().
void run_p2p(Comm& comm, const P2pEntry& e, Plan& plan, Steps& steps, CallBuffers buffers);

}  // namespace collscope
