// Exact volume of each all-to-all-v algorithm: bytes and messages one rank sends and
// receives in one call, for any N and any split matrix. Written from the schedules in
// patterns/, apart from the code that sends. An empty part is never sent and so never
// counted.
#include "collscope/alltoallv.hpp"
#include "collscope/collective.hpp"
#include "collscope/patterns/pairwise.hpp"

namespace collscope {

// Step k: the part for r+k out, the part from r-k in: the row and the column of the
// split matrix without the diagonal, one message per non-empty part. Without an N x N
// matrix there is no call to predict (the constraint refuses it): nothing is counted.
RankVolume alltoallv_pairwise_theory(int r, int n, const CollArgs& a) {
  RankVolume v;
  if (a.splits.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) return v;
  for (int k = 1; k <= patterns::pairwise_steps(n); ++k) {
    v.send(split_at(a, r, patterns::pairwise_send_peer(r, n, k), n) * a.elem_size());
    v.recv(split_at(a, patterns::pairwise_recv_peer(r, n, k), r, n) * a.elem_size());
  }
  return v;
}

}  // namespace collscope
