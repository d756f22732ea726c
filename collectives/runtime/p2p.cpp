// The table of point-to-point patterns (runtime/p2p.hpp), from the one list.
#include "collscope/runtime/p2p.hpp"

#include "collscope/coll_args.hpp"
#include "collscope/executor.hpp"
#include "collscope/progress.hpp"
#include "collscope/schedules.hpp"
#include "collscope/theory.hpp"

namespace collscope {
namespace {

const P2pEntry kPatterns[] = {
#define COLLSCOPE_ALGORITHM(collective, name, summary)
#define COLLSCOPE_VENDOR(collective, library, summary)
#define COLLSCOPE_P2P(name, summary)                                                   \
  P2pEntry{P2pPattern::name, #name, schedules::p2p_##name##_steps, schedules::p2p_##name, \
           theory::p2p_##name, summary},
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR
#undef COLLSCOPE_P2P
};
static_assert(std::size(kPatterns) == static_cast<std::size_t>(P2pPattern::ring) + 1);

}  // namespace

std::span<const P2pEntry> all_p2p_patterns() { return kPatterns; }

const P2pEntry& p2p_entry(P2pPattern p) { return kPatterns[static_cast<std::size_t>(p)]; }

std::optional<P2pPattern> p2p_by_name(std::string_view name) {
  for (const P2pEntry& e : kPatterns)
    if (e.name == name) return e.pattern;
  return std::nullopt;
}

Plan p2p_plan(int rank, int nranks, std::size_t bytes) {
  CollArgs args;
  args.count = bytes;
  args.dtype = DataType::uint8;
  return Plan(rank, nranks, args, {});
}

std::vector<RankVolume> planned_volume(const P2pEntry& e, const P2pStep& step, int rank,
                                       int nranks, std::size_t bytes) {
  Traffic traffic(nranks);
  Plan plan = p2p_plan(rank, nranks, bytes);
  Steps steps = e.schedule(plan, step, "plan");
  traffic.count_planned(steps);
  return traffic.per_peer();
}

void run_p2p(Comm& comm, const P2pEntry& e, Plan& plan, Steps& steps, CallBuffers buffers) {
  watched_call("pingpong", e.name.data(),
               [&] { comm.executor().run(plan, steps, buffers, comm.next_seq()); });
}

}  // namespace collscope
