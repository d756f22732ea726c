#include "../core/families.hpp"
#include "collscope/broadcast.hpp"

namespace collscope {
namespace {

const Algorithm kBroadcast[] = {
    {"broadcast", "binomial", broadcast_binomial, broadcast_binomial_theory, nullptr, false,
     "binomial tree from the root, the whole vector down every edge"},
    {"broadcast", "chain", broadcast_chain, broadcast_chain_theory, nullptr, false,
     "pipelined chain root -> root+1 -> ..., in segments"},
    {"broadcast", "scatter_allgather", broadcast_scatter_allgather,
     broadcast_scatter_allgather_theory, nullptr, false,
     "binomial scatter of N blocks then ring allgather (van de Geijn)"},
    {"broadcast", "mpi", broadcast_mpi, nullptr, broadcast_mpi_constraint, true,
     "MPI_Bcast (vendor)"},
};

}  // namespace

std::span<const Algorithm> broadcast_algorithms() { return kBroadcast; }

}  // namespace collscope
