// Comparison of a layer's result with the float64 reference of the unsharded layer.
//
//   rel_l2_error  = ||got - ref||_2 / ||ref||_2       (||got - ref||_2 when ref is all 0)
//   max_abs_error = max |got - ref|
//
// Tolerance (relative L2), per storage dtype and the length K of the longest sum that
// produced the tensor (the GEMM's inner dimension, times the ranks a collective adds):
//
//   tolerance = base x max(1, sqrt(K / 64)),  base: float32 1e-5, bfloat16 1.5625e-2
//
// Rounding errors of independent terms add up like a random walk, hence sqrt(K). float32
// rounds (unit roundoff 6e-8) inside the GEMMs and reductions: 1e-5 leaves two orders of
// magnitude of margin at K = 64 and keeps 1e-4 at K = 6400. bfloat16 rounds every stored
// value (unit roundoff 2^-8 = 3.9e-3); inputs and weights are exact in the reference (it
// is computed on the stored values), so the error comes from rounding activations,
// partial sums and each reduction step of a collective, about one unit of roundoff
// (measured 2e-3 to 4e-3 at 1 to 4 ranks): base = 4 units, 1.5625e-2.
// The largest element error must stay within 4 x tolerance x max|ref|: one element may be
// off more than the average (the largest of many errors, against the largest value,
// runs about 1.5 x the relative L2 error), while a bug (a missing reduction, a wrong
// shard, one corrupted element) is off by the order of the values themselves, which the
// L2 norm of a large tensor can dilute. NaN or infinity anywhere in `got` never passes.
#pragma once

#include <cstddef>

#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {

struct ErrorStats {
  double rel_l2_error = 0;
  double max_abs_error = 0;
  double tolerance = 0;          // on rel_l2_error
  double max_abs_tolerance = 0;  // on max_abs_error: 4 x tolerance x max|ref|
  std::size_t reduction_length = 0;
  bool finite = true;            // no NaN or infinity in got
  bool pass = false;
};

double tolerance_for(DataType storage, std::size_t reduction_length);

// Shapes must match (a mismatch is reported as a failure with infinite errors).
ErrorStats compare(const Tensor& got, const RefTensor& ref, DataType storage,
                   std::size_t reduction_length);

// Two comparisons of one tensor (two ranks' copies, two replicas, two experts) as one:
// the numbers of the one closer to failing (a failing one first; else the larger
// error / tolerance ratio), a pass only if both passed.
ErrorStats worst_of(const ErrorStats& a, const ErrorStats& b);

}  // namespace collscope::layers
