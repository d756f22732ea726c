#include "../core/families.hpp"
#include "collscope/alltoallv.hpp"

namespace collscope {
namespace {

const Algorithm kAlltoallv[] = {
    {"alltoallv", "pairwise", alltoallv_pairwise, alltoallv_pairwise_theory,
     alltoallv_pairwise_constraint, false,
     "N-1 steps: at step k send the part for rank+k, receive the part from rank-k"},
    {"alltoallv", "mpi", alltoallv_mpi, nullptr, alltoallv_mpi_constraint, true,
     "MPI_Alltoallv (vendor)"},
};

}  // namespace

std::span<const Algorithm> alltoallv_algorithms() { return kAlltoallv; }

}  // namespace collscope
