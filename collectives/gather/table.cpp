#include "../core/families.hpp"
#include "collscope/gather.hpp"

namespace collscope {
namespace {

const Algorithm kGather[] = {
    {"gather", "linear", gather_linear, gather_linear_theory, nullptr, false,
     "every rank sends its block straight to the root"},
    {"gather", "binomial", gather_binomial, gather_binomial_theory, gather_binomial_constraint,
     false, "binomial tree: each rank forwards its subtree's blocks in one message"},
    {"gather", "mpi", gather_mpi, nullptr, gather_mpi_constraint, true,
     "MPI_Gather / MPI_Gatherv (vendor)"},
};

}  // namespace

std::span<const Algorithm> gather_algorithms() { return kGather; }

}  // namespace collscope
