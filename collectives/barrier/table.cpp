#include "../core/families.hpp"
#include "collscope/barrier.hpp"

namespace collscope {
namespace {

const Algorithm kBarrier[] = {
    {"barrier", "dissemination", barrier_dissemination, barrier_dissemination_theory,
     nullptr, false, "ceil(log2 N) rounds: signal rank+2^k, wait for rank-2^k"},
    {"barrier", "mpi", barrier_mpi, nullptr, nullptr, true, "MPI_Barrier (vendor)"},
};

}  // namespace

std::span<const Algorithm> barrier_algorithms() { return kBarrier; }

}  // namespace collscope
