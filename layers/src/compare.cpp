#include "collscope/layers/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace collscope::layers {
namespace {

constexpr double kMaxAbsFactor = 4;

ErrorStats shape_mismatch(ErrorStats s) {
  s.rel_l2_error = s.max_abs_error = std::numeric_limits<double>::infinity();
  s.pass = false;
  return s;
}

}  // namespace

double tolerance_for(DataType storage, std::size_t reduction_length) {
  const double base = storage == DataType::bfloat16 ? 4 * 0x1p-8 : 1e-5;
  return base * std::max(1.0, std::sqrt(static_cast<double>(reduction_length) / 64.0));
}

ErrorStats compare(const Tensor& got, const RefTensor& ref, DataType storage,
                   std::size_t reduction_length) {
  ErrorStats s;
  s.reduction_length = reduction_length;
  s.tolerance = tolerance_for(storage, reduction_length);
  if (!got.same_shape(ref)) return shape_mismatch(s);
  double diff2 = 0, ref2 = 0, ref_max = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got.data[i], r = ref.data[i], d = std::abs(g - r);
    s.finite = s.finite && std::isfinite(g);
    diff2 += d * d;
    ref2 += r * r;
    ref_max = std::max(ref_max, std::abs(r));
    // NaN compares false: max would drop it, so it is taken explicitly.
    s.max_abs_error = std::isnan(d) ? d : std::max(s.max_abs_error, d);
  }
  s.rel_l2_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  s.max_abs_tolerance = kMaxAbsFactor * s.tolerance * ref_max;
  s.pass = s.finite && s.rel_l2_error <= s.tolerance && s.max_abs_error <= s.max_abs_tolerance;
  return s;
}

ErrorStats worst_of(const ErrorStats& a, const ErrorStats& b) {
  ErrorStats s = a;
  // std::max keeps its first argument when the second is NaN: NaN must win.
  auto worse = [](double x, double y) { return std::isnan(x) || x >= y ? x : y; };
  s.rel_l2_error = worse(a.rel_l2_error, b.rel_l2_error);
  s.max_abs_error = worse(a.max_abs_error, b.max_abs_error);
  s.tolerance = std::min(a.tolerance, b.tolerance);
  s.max_abs_tolerance = std::min(a.max_abs_tolerance, b.max_abs_tolerance);
  s.reduction_length = std::max(a.reduction_length, b.reduction_length);
  s.finite = a.finite && b.finite;
  s.pass = a.pass && b.pass;
  return s;
}

}  // namespace collscope::layers
