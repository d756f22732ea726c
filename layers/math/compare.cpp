#include "collscope/layers/math/compare.hpp"

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

namespace {

// How close a comparison came to failing: its larger error-to-tolerance ratio (a
// non-finite result or an error over a zero tolerance is infinitely close).
double closeness(const ErrorStats& e) {
  if (!e.finite || std::isnan(e.rel_l2_error) || std::isnan(e.max_abs_error))
    return std::numeric_limits<double>::infinity();
  auto ratio = [](double err, double tol) {
    return tol > 0 ? err / tol : err > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  };
  return std::max(ratio(e.rel_l2_error, e.tolerance), ratio(e.max_abs_error, e.max_abs_tolerance));
}

}  // namespace

ErrorStats worst_of(const ErrorStats& a, const ErrorStats& b) {
  // The numbers of one real comparison (a failing one first, else the closer to failing),
  // so the record never pairs one comparison's error with another's tolerance.
  const bool take_b = (a.pass && !b.pass) || (a.pass == b.pass && closeness(b) > closeness(a));
  ErrorStats s = take_b ? b : a;
  s.finite = a.finite && b.finite;
  s.pass = a.pass && b.pass;
  return s;
}

}  // namespace collscope::layers
