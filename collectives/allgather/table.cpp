#include "../core/families.hpp"
#include "collscope/allgather.hpp"

namespace collscope {
namespace {

const Algorithm kAllgather[] = {
    {"allgather", "ring", allgather_ring, allgather_ring_theory, nullptr, false,
     "ring: N-1 steps, each rank forwards the block it received last"},
    {"allgather", "recursive_doubling", allgather_recursive_doubling,
     allgather_recursive_doubling_theory, nullptr, false,
     "recursive doubling: exchange with rank r^d, d = 1, 2, 4, ...; fold for non-powers of two"},
    {"allgather", "bruck", allgather_bruck, allgather_bruck_theory, allgather_bruck_constraint, false,
     "Bruck: ceil(log2 N) steps to r-d / from r+d in a rotated buffer, rotated back at the end"},
    {"allgather", "mpi", allgather_mpi, nullptr, allgather_mpi_constraint, true,
     "MPI_Allgather, or MPI_Allgatherv for uneven blocks (vendor)"},
};

}  // namespace

std::span<const Algorithm> allgather_algorithms() { return kAllgather; }

}  // namespace collscope
