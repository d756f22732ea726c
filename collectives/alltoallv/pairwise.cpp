// Pairwise all-to-all-v: the pairwise all-to-all (alltoall/pairwise.cpp) with the parts
// the split matrix gives (Open MPI coll/base alltoallv "pairwise").
//
//   N = 3, splits (row = sender):   [1 2 0]      rank 0 sends 2 elements to 1, none to 2
//                                   [3 0 1]      rank 1 sends 3 to 0, 1 to 2
//                                   [0 2 2]      rank 2 sends 2 to 1
//   step 1: r sends its part for r+1, receives the part from r-1
//     0 --2--> 1      1 --1--> 2      2 --0--> 0  (empty: skipped on both sides)
//   step 2: r sends its part for r+2, receives the part from r-2
//     0 --0--> 2      1 --3--> 0      2 --2--> 1
//   own part (the diagonal): a local copy.
//
// Every rank sends its row and receives its column, the diagonal aside, one message per
// non-empty part. Limits: none (any N, any split matrix, zeros included); no in-place
// form (collective.hpp).
#include <vector>

#include "collscope/collective.hpp"
#include "collscope/patterns/pairwise.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps alltoallv_pairwise(Plan& p) {
  const int n = p.size(), r = p.rank();
  const CollArgs& a = p.args();
  const std::size_t elem = p.elem();
  auto part = [&](int from, int to) { return split_at(a, from, to, n) * elem; };
  // Where each peer's part starts in this rank's buffers: the prefix sums of its row and
  // column of the split matrix, once (one sum per step would cost O(N^2) per rank).
  std::vector<std::uint64_t> send_off(static_cast<std::size_t>(n) + 1, 0), recv_off(send_off);
  for (int j = 0; j < n; ++j) {
    const auto i = static_cast<std::size_t>(j);
    send_off[i + 1] = send_off[i] + split_at(a, r, j, n);
    recv_off[i + 1] = recv_off[i] + split_at(a, j, r, n);
  }
  auto send_at = [&](int to) { return Plan::send(send_off[static_cast<std::size_t>(to)] * elem); };
  auto recv_at = [&](int from) { return Plan::recv(recv_off[static_cast<std::size_t>(from)] * elem); };
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  s.copy(recv_at(r), send_at(r), part(r, r));  // in the first step
  for (int k = 1; k <= patterns::pairwise_steps(n); ++k) {
    const int to = patterns::pairwise_send_peer(r, n, k);
    const int from = patterns::pairwise_recv_peer(r, n, k);
    s.recv(from, recv_at(from), part(from, r), tag).send(to, send_at(to), part(r, to), tag);
    co_yield s.step("pairwise", k);
  }
  co_yield s.step("pairwise", n);  // N = 1: the diagonal's copy
}

}  // namespace collscope::schedules
