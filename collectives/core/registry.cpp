#include <chrono>

#include "collscope/algorithm.hpp"
#include "collscope/allreduce.hpp"

namespace collscope {
namespace {

const Algorithm kAlgorithms[] = {
    {"allreduce", "ring", allreduce_ring, allreduce_ring_theory, nullptr, false,
     "ring reduce-scatter then ring allgather"},
    {"allreduce", "direct", allreduce_direct, allreduce_direct_theory,
     allreduce_direct_constraint, false,
     "every rank sends its whole vector to every other rank and reduces locally"},
    {"allreduce", "tree", allreduce_tree, allreduce_tree_theory, nullptr, false,
     "binary tree reduce to rank 0 then broadcast, pipelined in segments"},
    {"allreduce", "dbt", allreduce_dbt, allreduce_dbt_theory, nullptr, false,
     "double binary tree (NCCL), half of the vector on each tree"},
    {"allreduce", "halving_doubling", allreduce_halving_doubling,
     allreduce_halving_doubling_theory, nullptr, false,
     "Rabenseifner: recursive halving reduce-scatter, recursive doubling allgather"},
    {"allreduce", "mpi", allreduce_mpi, nullptr, allreduce_mpi_constraint, true,
     "MPI_Allreduce (vendor)"},
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::span<const Algorithm> all_algorithms() { return kAlgorithms; }

const Algorithm* find_algorithm(std::string_view collective, std::string_view name) {
  for (const Algorithm& a : kAlgorithms)
    if (a.collective == collective && a.name == name) return &a;
  return nullptr;
}

void run_collective(Comm& comm, const Algorithm& algo, const CollArgs& args) {
  progress().call_started_ns.store(now_ns(), std::memory_order_relaxed);
  comm.begin_call(algo.collective.data(), algo.name.data(), args.mem);
  if (args.op == ReduceOp::avg) {
    CollArgs as_sum = args;
    as_sum.op = ReduceOp::sum;
    algo.run(comm, as_sum);
    comm.reducer().divide(args.recvbuf, args.count, args.dtype, comm.size());
  } else {
    algo.run(comm, args);
  }
  comm.end_call();
  progress().call_started_ns.store(0, std::memory_order_relaxed);
}

double busbw_factor(std::string_view collective, int nranks) {
  const double n = nranks;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather" || collective == "reduce_scatter" ||
      collective == "alltoall" || collective == "alltoallv" || collective == "gather" ||
      collective == "scatter")
    return (n - 1) / n;
  return 1.0;
}

}  // namespace collscope
