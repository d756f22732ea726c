#include "../core/families.hpp"
#include "collscope/reduce.hpp"

namespace collscope {
namespace {

const Algorithm kReduce[] = {
    {"reduce", "binomial", reduce_binomial, reduce_binomial_theory, reduce_binomial_constraint,
     false, "binomial tree to the root, the whole vector up every edge (commutative ops)"},
    {"reduce", "mpi", reduce_mpi, nullptr, reduce_mpi_constraint, true, "MPI_Reduce (vendor)"},
};

}  // namespace

std::span<const Algorithm> reduce_algorithms() { return kReduce; }

}  // namespace collscope
