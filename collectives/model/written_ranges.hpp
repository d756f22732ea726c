// The bytes a rank has written so far in one call, for the traces' from_input flag
// (schedule_trace.cpp; MODEL.md, "Where the bytes sit").
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

#include "collscope/schedule.hpp"

namespace collscope::detail {

// The bytes a rank has written so far in the call (received into, or a reduction's,
// copy's or division's output), as merged ranges per space of Plan::locate. A sorted
// vector, not a tree: writes land next to earlier ones, so a rank holds a few ranges,
// and merging costs no allocation (a tree's node per receive made a ring all-reduce at
// N = 4096 1.8 times slower to predict).
class WrittenRanges {
 public:
  void add(const Range& r) {
    if (r.begin >= r.end) return;
    auto& ranges = space(r.space);
    // [lo, hi): the ranges r touches or meets end to end.
    const auto lo = std::lower_bound(ranges.begin(), ranges.end(), r.begin,
                                     [](const Span& x, std::size_t b) { return x.end < b; });
    const auto hi = std::upper_bound(lo, ranges.end(), r.end,
                                     [](std::size_t e, const Span& x) { return e < x.begin; });
    if (lo == hi) {
      ranges.insert(lo, Span{r.begin, r.end});
      return;
    }
    lo->begin = std::min(lo->begin, r.begin);
    lo->end = std::max(std::prev(hi)->end, r.end);
    ranges.erase(std::next(lo), hi);
  }
  // Whether any byte of r has been written.
  bool touches(const Range& r) const {
    if (r.begin >= r.end || static_cast<std::size_t>(r.space) >= spaces_.size()) return false;
    const auto& ranges = spaces_[static_cast<std::size_t>(r.space)];
    // The first range that ends after r begins: the only one that can overlap r first.
    const auto it = std::upper_bound(ranges.begin(), ranges.end(), r.begin,
                                     [](std::size_t b, const Span& x) { return b < x.end; });
    return it != ranges.end() && it->begin < r.end;
  }

 private:
  struct Span {
    std::size_t begin, end;
  };
  using Spans = std::vector<Span>;  // sorted, disjoint, not end to end
  Spans& space(int s) {
    const auto i = static_cast<std::size_t>(s);
    if (i >= spaces_.size()) spaces_.resize(i + 1);
    return spaces_[i];
  }
  std::vector<Spans> spaces_;
};

}  // namespace collscope::detail
