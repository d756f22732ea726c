// Verification traffic: every rank's tensor to rank 0 over plain MPI (a control
// communicator apart from the layer's groups), so it is never counted as the layer's.
#pragma once

#include <mpi.h>

#include <vector>

#include "collscope/layers/compute/array.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

// Collective over `comm`: on rank 0, every rank's tensor indexed by rank; elsewhere empty.
std::vector<Tensor> gather_to_root(MPI_Comm comm, const Tensor& t);
// The same for an array in any engine's memory (its values as floats).
std::vector<Tensor> gather_to_root(MPI_Comm comm, const Array& a);

// The tensors of `ranks`, in that order (as float64: ref_parts).
std::vector<Tensor> parts_of(const std::vector<Tensor>& by_rank, const std::vector<int>& ranks);
std::vector<RefTensor> ref_parts(const std::vector<Tensor>& by_rank, const std::vector<int>& ranks);

}  // namespace collscope::layers
