// Pairwise all-to-all: N-1 steps, one peer each way per step (Open MPI coll/base
// "pairwise", MPICH's long-message algorithm; Thakur, Rabenseifner, Gropp 2005).
//
//   N = 3, rank r holds send blocks r0 r1 r2 (block rj goes to rank j):
//   step 1: rank r sends block r(r+1) to r+1 and receives (r-1)r from r-1
//     0 --01--> 1      1 --12--> 2      2 --20--> 0
//   step 2: rank r sends block r(r+2) to r+2 and receives (r-2)r from r-2
//     0 --02--> 2      1 --10--> 0      2 --21--> 1
//   own block rr: a local copy.          result on rank r: 0r 1r 2r
//
// Every rank sends and receives N-1 blocks in N-1 messages, the least any all-to-all
// can move. Limits: none (any N, any count). In place, the whole input is first copied
// to scratch (N x count elements), since step k overwrites blocks later steps send.
#include "collscope/scratch_limit.hpp"
#include "collscope/alltoall.hpp"
#include "collscope/patterns/pairwise.hpp"
#include "blocks.hpp"

namespace collscope {
namespace {

enum : std::uint32_t { kTagPairwise = 10 };

// The input to read from: the send buffer, or its copy when the call is in place.
const std::byte* input_blocks(Comm& comm, const CollArgs& a, std::size_t total) {
  if (!a.in_place()) return static_cast<const std::byte*>(a.sendbuf);
  void* copy = comm.scratch(0, total);
  comm.reducer().copy(copy, a.sendbuf, total);
  return static_cast<const std::byte*>(copy);
}

}  // namespace

std::optional<std::string> alltoall_pairwise_constraint(int nranks, const CollArgs& a) {
  if (!a.in_place()) return std::nullopt;
  return scratch_constraint("alltoall", "pairwise", detail::alltoall_blocks_bytes(a, nranks),
                            nranks, a);
}

void alltoall_pairwise(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t blk = detail::alltoall_block_bytes(a);
  auto off = [blk](int block) { return static_cast<std::size_t>(block) * blk; };
  const std::byte* in = input_blocks(comm, a, off(n));
  std::byte* out = static_cast<std::byte*>(a.recvbuf);
  if (!a.in_place()) comm.reducer().copy(out + off(r), in + off(r), blk);
  for (int k = 1; k <= patterns::pairwise_steps(n); ++k) {
    comm.step("pairwise", k);
    const int to = patterns::pairwise_send_peer(r, n, k);
    const int from = patterns::pairwise_recv_peer(r, n, k);
    Request reqs[2] = {comm.irecv(from, out + off(from), blk, kTagPairwise),
                       comm.isend(to, in + off(to), blk, kTagPairwise)};
    comm.wait_all(reqs);
  }
}

}  // namespace collscope
