#include "../core/families.hpp"
#include "collscope/allreduce.hpp"

namespace collscope {
namespace {

const Algorithm kAllreduce[] = {
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

}  // namespace

std::span<const Algorithm> allreduce_algorithms() { return kAllreduce; }

}  // namespace collscope
