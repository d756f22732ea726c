// Small integer helpers the schedules share. No I/O.
#pragma once

namespace collscope::patterns {

// The smallest k with 2^k >= n (n >= 1): log2 of a power of two, rounded up otherwise
// (a binomial tree over n ranks has ceil_log2(n) rounds).
inline int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace collscope::patterns
