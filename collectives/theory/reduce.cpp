// Exact volume of each reduce algorithm: bytes and messages one rank sends and receives
// in one call, from the schedule alone. A zero-byte message is never sent or counted.
#include "collscope/patterns/binomial.hpp"
#include "collscope/reduce.hpp"

namespace collscope {

// The whole vector up each tree edge: once from every child, once to the parent.
RankVolume reduce_binomial_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  const int vr = patterns::to_virtual(r, a.root, n);
  for (std::size_t c = 0; c < patterns::binomial_children(n, vr).size(); ++c) v.recv(a.bytes());
  if (vr != 0) v.send(a.bytes());
  return v;
}

}  // namespace collscope
