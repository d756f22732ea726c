#include "../core/families.hpp"
#include "collscope/alltoall.hpp"

namespace collscope {
namespace {

const Algorithm kAlltoall[] = {
    {"alltoall", "pairwise", alltoall_pairwise, alltoall_pairwise_theory,
     alltoall_pairwise_constraint, false,
     "N-1 steps: at step k send to rank+k, receive from rank-k"},
    {"alltoall", "ring", alltoall_ring, alltoall_ring_theory, alltoall_ring_constraint, false,
     "store and forward along the ring: N(N-1)/2 blocks in N-1 messages per rank"},
    {"alltoall", "bruck", alltoall_bruck, alltoall_bruck_theory, alltoall_bruck_constraint,
     false, "Bruck: ceil(log2 N) steps, more bytes than pairwise in fewer messages"},
    {"alltoall", "mpi", alltoall_mpi, nullptr, alltoall_mpi_constraint, true,
     "MPI_Alltoall (vendor)"},
};

}  // namespace

std::span<const Algorithm> alltoall_algorithms() { return kAlltoall; }

}  // namespace collscope
