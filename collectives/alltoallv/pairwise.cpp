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
#include "collscope/alltoallv.hpp"
#include "collscope/patterns/pairwise.hpp"
#include "splits.hpp"

namespace collscope {
namespace {

enum : std::uint32_t { kTagPairwiseV = 20 };

}  // namespace

std::optional<std::string> alltoallv_pairwise_constraint(int nranks, const CollArgs& a) {
  return detail::split_matrix_check(nranks, a);
}

void alltoallv_pairwise(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::vector<std::size_t> send_off = detail::send_part_offsets(a, r, n);
  const std::vector<std::size_t> recv_off = detail::recv_part_offsets(a, r, n);
  const auto* in = static_cast<const std::byte*>(a.sendbuf);
  auto* out = static_cast<std::byte*>(a.recvbuf);
  auto part_bytes = [&](int from, int to) {
    return static_cast<std::size_t>(split_at(a, from, to, n)) * a.elem_size();
  };
  auto idx = [](int i) { return static_cast<std::size_t>(i); };
  comm.reducer().copy(out + recv_off[idx(r)], in + send_off[idx(r)], part_bytes(r, r));
  for (int k = 1; k <= patterns::pairwise_steps(n); ++k) {
    comm.step("pairwise", k);
    const int to = patterns::pairwise_send_peer(r, n, k);
    const int from = patterns::pairwise_recv_peer(r, n, k);
    Request reqs[2] = {
        comm.irecv(from, out + recv_off[idx(from)], part_bytes(from, r), kTagPairwiseV),
        comm.isend(to, in + send_off[idx(to)], part_bytes(r, to), kTagPairwiseV)};
    comm.wait_all(reqs);
  }
}

}  // namespace collscope
