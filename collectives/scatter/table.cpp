#include "../core/families.hpp"
#include "collscope/scatter.hpp"

namespace collscope {
namespace {

const Algorithm kScatter[] = {
    {"scatter", "linear", scatter_linear, scatter_linear_theory, nullptr, false,
     "the root sends every rank its block straight"},
    {"scatter", "binomial", scatter_binomial, scatter_binomial_theory,
     scatter_binomial_constraint, false,
     "binomial tree: each rank receives its subtree's blocks in one message"},
    {"scatter", "mpi", scatter_mpi, nullptr, scatter_mpi_constraint, true,
     "MPI_Scatter / MPI_Scatterv (vendor)"},
};

}  // namespace

std::span<const Algorithm> scatter_algorithms() { return kScatter; }

}  // namespace collscope
