#include "../core/families.hpp"
#include "collscope/reduce_scatter.hpp"

namespace collscope {
namespace {

const Algorithm kReduceScatter[] = {
    {"reduce_scatter", "ring", reduce_scatter_ring, reduce_scatter_ring_theory, nullptr, false,
     "ring: N-1 steps, each rank adds its part to the partial sum it forwards"},
    {"reduce_scatter", "halving", reduce_scatter_halving, reduce_scatter_halving_theory,
     reduce_scatter_halving_constraint, false,
     "recursive halving: exchange half the range with rank r^d, d = N/2, ..., 1; fold for "
     "non-powers of two"},
    {"reduce_scatter", "mpi", reduce_scatter_mpi, nullptr, reduce_scatter_mpi_constraint, true,
     "MPI_Reduce_scatter_block, or MPI_Reduce_scatter for uneven blocks (vendor)"},
};

}  // namespace

std::span<const Algorithm> reduce_scatter_algorithms() { return kReduceScatter; }

}  // namespace collscope
