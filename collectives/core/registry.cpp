#include <chrono>
#include <vector>

#include "collscope/algorithm.hpp"
#include "collscope/collective.hpp"
#include "families.hpp"

namespace collscope {
namespace {

// Every collective's table, joined once.
const std::vector<Algorithm>& table() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> v;
    for (auto family : {allreduce_algorithms, reduce_scatter_algorithms, allgather_algorithms,
                        broadcast_algorithms, reduce_algorithms, gather_algorithms,
                        scatter_algorithms, alltoall_algorithms, alltoallv_algorithms,
                        barrier_algorithms})
      for (const Algorithm& a : family()) v.push_back(a);
    return v;
  }();
  return all;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::span<const Algorithm> all_algorithms() { return table(); }

const Algorithm* find_algorithm(std::string_view collective, std::string_view name) {
  for (const Algorithm& a : table())
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
    // The reduced elements this rank holds: the whole vector, its block, or none.
    const std::size_t held =
        find_collective(algo.collective)->recv_count(args, comm.rank(), comm.size());
    comm.reducer().divide(args.recvbuf, held, args.dtype, comm.size());
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
