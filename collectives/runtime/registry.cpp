#include <string>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/consumed_receives.hpp"
#include "collscope/progress.hpp"
#include "collscope/schedules.hpp"
#include "collscope/vendor_mpi.hpp"
#include "collscope/vendor_nccl.hpp"

namespace collscope {
namespace {

// Each collective's vendor calls, in the order of the Collective enum: MPI's and NCCL's
// (NCCL has no all-to-all-v or barrier: no run).
struct VendorCalls {
  VendorCall mpi, nccl;
};
const VendorCalls kVendorCalls[] = {
    {vendor::kMpiAllreduce, vendor::kNcclAllreduce},
    {vendor::kMpiReduceScatter, vendor::kNcclReduceScatter},
    {vendor::kMpiAllgather, vendor::kNcclAllgather},
    {vendor::kMpiBroadcast, vendor::kNcclBroadcast},
    {vendor::kMpiReduce, vendor::kNcclReduce},
    {vendor::kMpiGather, vendor::kNcclGather},
    {vendor::kMpiScatter, vendor::kNcclScatter},
    {vendor::kMpiAlltoall, vendor::kNcclAlltoall},
    {vendor::kMpiAlltoallv, {}},
    {vendor::kMpiBarrier, {}},
};
static_assert(std::size(kVendorCalls) == static_cast<std::size_t>(Collective::barrier) + 1);

const VendorCall* vendor_call(Collective c, std::string_view library) {
  const VendorCalls& calls = kVendorCalls[static_cast<std::size_t>(c)];
  if (library == "mpi") return &calls.mpi;
  if (library == "nccl") return &calls.nccl;
  return nullptr;
}

// The table, from the one list.
const std::vector<Algorithm>& table() {
  static const std::vector<Algorithm> all = {
#define COLLSCOPE_ALGORITHM(collective, name, summary)                                      \
  Algorithm{Collective::collective, #name, schedules::collective##_##name, nullptr,         \
            theory::collective##_##name, summary},
#define COLLSCOPE_VENDOR(collective, library, summary) \
  Algorithm{Collective::collective, #library, nullptr,  \
            vendor_call(Collective::collective, #library), nullptr, summary},
#define COLLSCOPE_P2P(name, summary)  // not collectives: runtime/p2p.hpp
#include "collscope/algorithms.def"
#undef COLLSCOPE_ALGORITHM
#undef COLLSCOPE_VENDOR
#undef COLLSCOPE_P2P
  };
  return all;
}

// The hand-written schedule, then (avg) the division of what this rank holds.
Steps with_average(Steps inner, Plan& plan, std::size_t held_bytes) {
  int last = 0;
  while (inner.next()) {
    last = inner.value().index;
    co_yield inner.value();
  }
  StepBuilder s(plan);
  s.divide(Plan::recv(), held_bytes);
  co_yield s.step("average", last + 1);
}

// A vendor call's avg: the division alone, run through the executor.
Steps division_only(Plan& plan, std::size_t held_bytes) {
  StepBuilder s(plan);
  s.divide(Plan::recv(), held_bytes);
  co_yield s.step("average", 0);
}

std::size_t held_bytes(const Algorithm& algo, const Plan& plan) {
  return algo.info().recv_count(plan.args(), plan.rank(), plan.size()) * plan.elem();
}

CollArgs as_sum(const CollArgs& a) {
  CollArgs s = a;
  if (s.op == ReduceOp::avg) s.op = ReduceOp::sum;
  return s;
}

}  // namespace

std::string Algorithm::full_name() const {
  return std::string(collective_name()) + "_" + std::string(name);
}

std::span<const Algorithm> all_algorithms() { return table(); }

const Algorithm* find_algorithm(std::string_view collective, std::string_view name) {
  const CollectiveInfo* c = find_collective(collective);
  return c ? find_algorithm(c->id, name) : nullptr;
}

const Algorithm* find_algorithm(Collective collective, std::string_view name) {
  for (const Algorithm& a : table())
    if (a.collective == collective && a.name == name) return &a;
  return nullptr;
}

Plan make_plan(const Algorithm& algo, int rank, int nranks, const CollArgs& args,
               bool in_place) {
  return Plan(rank, nranks, args, aliasing_of(algo.info(), args, in_place, rank, nranks));
}

Plan make_plan(const Algorithm& algo, int rank, int nranks, const CollArgs& args) {
  return make_plan(algo, rank, nranks, args, is_in_place(algo.info(), args, rank, nranks));
}

Steps schedule_of(const Algorithm& algo, Plan& plan) {
  if (plan.args().op != ReduceOp::avg) return algo.schedule(plan);
  // The algorithm reduces as sum: a copy of the plan's args with op = sum is what it
  // sees; the plan itself keeps avg only to size the final division.
  plan = Plan(plan.rank(), plan.size(), as_sum(plan.args()), plan.aliasing());
  const std::size_t held = held_bytes(algo, plan);
  return with_average(algo.schedule(plan), plan, held);
}

std::size_t max_scratch_bytes(const Algorithm& algo, int nranks, const CollArgs& args,
                              bool in_place) {
  if (!algo.schedule) return 0;
  std::size_t most = 0;
  for (int r = 0; r < nranks; ++r) {
    Plan plan = make_plan(algo, r, nranks, as_sum(args), in_place);
    Steps steps = algo.schedule(plan);
    steps.next();  // runs the schedule up to its first step: its declarations are done
    most = std::max(most, plan.scratch_total());
  }
  return most;
}

std::optional<std::string> call_problem(const Algorithm& algo, int nranks, const CollArgs& args,
                                        bool in_place) {
  if (algo.collective == Collective::alltoallv)
    if (auto bad = split_matrix_problem(nranks, args)) return bad;
  if (algo.vendor) return algo.vendor->constraint ? algo.vendor->constraint(nranks, args) : std::nullopt;
  const std::size_t need = max_scratch_bytes(algo, nranks, args, in_place);
  if (need <= args.scratch_limit) return std::nullopt;
  return std::string(algo.collective_name()) + "/" + std::string(algo.name) + " needs " +
         std::to_string(need) + " B of scratch per rank at " +
         std::to_string(nranks) + " ranks, above the limit of " +
         std::to_string(args.scratch_limit) + " B (--max-scratch)";
}

std::vector<RankVolume> planned_volume(const Algorithm& algo, int rank, int nranks,
                                       const CollArgs& args, bool in_place) {
  Traffic traffic(nranks);
  if (!algo.schedule) return traffic.per_peer();
  Plan plan = make_plan(algo, rank, nranks, args, in_place);
  Steps steps = schedule_of(algo, plan);
  traffic.count_planned(steps);
  return traffic.per_peer();
}

std::uint64_t planned_consumed_bytes(const Algorithm& algo, int rank, int nranks,
                                     const CollArgs& args, bool in_place) {
  if (!algo.schedule) return 0;
  Plan plan = make_plan(algo, rank, nranks, args, in_place);
  Steps steps = schedule_of(algo, plan);
  std::vector<int> consumer;
  std::uint64_t bytes = 0;
  while (steps.next()) {
    const Step& s = steps.value();
    consumed_receives(plan, s, consumer);
    for (std::size_t i = 0; i < s.comm.size(); ++i)
      if (consumer[i] >= 0) bytes += s.comm[i].bytes;
  }
  return bytes;
}

namespace {

// The same call as one the executor kept is replayed; else made and run (and kept).
void run_schedule(Comm& comm, const Algorithm& algo, const CollArgs& args, std::uint32_t seq) {
  Plan plan = make_plan(algo, comm.rank(), comm.size(), args);
  const CallBuffers buffers{args.sendbuf, args.recvbuf};
  const CallKey key = CallKey::of(&algo, plan);
  if (comm.executor().replay(key, buffers, seq)) return;
  Steps steps = schedule_of(algo, plan);
  comm.executor().run(plan, steps, buffers, seq, &key);
}

// The library's call; avg is reduced as sum, then divided through the executor (the
// only case that needs a plan).
void run_vendor(Comm& comm, const Algorithm& algo, const CollArgs& args, std::uint32_t seq) {
  if (args.op != ReduceOp::avg) return algo.vendor->run(comm, args);
  algo.vendor->run(comm, as_sum(args));
  Plan plan = make_plan(algo, comm.rank(), comm.size(), args);
  Steps steps = division_only(plan, held_bytes(algo, plan));
  comm.executor().run(plan, steps, {args.sendbuf, args.recvbuf}, seq);
}

}  // namespace

// The watchdog's marks (progress.hpp) are a few stores around the call: nothing else is
// added to a call, so a loop of calls times the call (docs/timing.md).
void run_collective(Comm& comm, const Algorithm& algo, const CollArgs& args) {
  watched_call(algo.collective_name().data(), algo.name.data(), [&] {
    const std::uint32_t seq = comm.next_seq();
    if (algo.schedule) run_schedule(comm, algo, args, seq);
    else run_vendor(comm, algo, args, seq);
  });
}

}  // namespace collscope
