// Scatter + allgather broadcast (van de Geijn; MPICH's MPIR_Bcast_intra_scatter_ring_
// allgather, Open MPI's "scatter_allgather_ring"). The root's vector is cut into N
// blocks (the uneven rule); a binomial scatter on virtual ranks v = (rank - root) mod N
// (patterns/binomial.hpp) leaves every rank holding the blocks of its subtree, block r
// among them; a ring allgather (allgather_ring, in place) then gives everyone the rest.
//
//   N = 4, root 0, blocks A B C D:
//     scatter  round 0: 0 -CD-> 2           round 1: 0 -B-> 1, 2 -D-> 3
//              now 0:[A B C D] 1:[. B . .] 2:[. . C D] 3:[. . . D]
//     allgather (ring, N-1 steps): every rank receives the N-1 blocks but its own
//
// Every rank lands its blocks straight in its receive buffer, in real-rank order. With
// root != 0 a subtree's blocks can wrap past block N-1 to block 0 (root 1 of 4: the
// subtree v 2..3 is real 3, 0): such a subtree travels as two messages, one per piece
// (tags 2 and 3; the ring uses tag 1).
//
// Per rank: the scatter moves its subtree's blocks in (not the root) and each child's
// subtree's blocks out, one message per piece; the ring moves N-1 blocks each way.
// About 2 x the vector per rank instead of the binomial's log2 N x: the choice for
// large vectors. Limits: none (any N, count, root; count < N leaves blocks empty).
#include <vector>

#include "collscope/allgather.hpp"
#include "collscope/broadcast.hpp"
#include "collscope/patterns/binomial.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
using patterns::RankRun;

constexpr std::uint32_t kTagPiece[2] = {2, 3};  // first and second real run of a subtree
static_assert(kTagPiece[0] != kAllgatherTag && kTagPiece[1] != kAllgatherTag);

// Posts one message per non-empty piece of the virtual run `sub` (send or receive).
template <class Post>
void for_each_piece(const Comm& comm, const CollArgs& a, RankRun sub, Post post) {
  const auto runs = patterns::real_runs(comm.size(), a.root, sub);
  for (int i = 0; i < 2; ++i) {
    const Block b = patterns::run_block(a.count, comm.size(), runs[static_cast<std::size_t>(i)]);
    post(at(a.recvbuf, b, a.elem_size()), b.count * a.elem_size(), kTagPiece[i]);
  }
}

void scatter(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const int v = patterns::to_virtual(comm.rank(), a.root, n);
  comm.step("scatter", 0);
  if (v == 0) {
    if (!a.in_place()) comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
  } else {
    const int parent = patterns::to_real(patterns::binomial_parent(n, v), a.root, n);
    std::vector<Request> recvs;
    for_each_piece(comm, a, patterns::binomial_subtree(n, v),
                   [&](std::byte* p, std::size_t bytes, std::uint32_t tag) {
                     recvs.push_back(comm.irecv(parent, p, bytes, tag));
                   });
    comm.wait_all(recvs);
  }
  std::vector<Request> sends;
  int k = 0;
  for (int c : patterns::binomial_children(n, v)) {
    comm.step("scatter", ++k);
    const int child = patterns::to_real(c, a.root, n);
    for_each_piece(comm, a, patterns::binomial_subtree(n, c),
                   [&](std::byte* p, std::size_t bytes, std::uint32_t tag) {
                     sends.push_back(comm.isend(child, p, bytes, tag));
                   });
  }
  comm.wait_all(sends);  // the ring rewrites these blocks (with the same values)
}

}  // namespace

void broadcast_scatter_allgather(Comm& comm, const CollArgs& a) {
  scatter(comm, a);
  CollArgs ring = a;  // allgather in place: my block is already in my receive buffer
  const Block own = patterns::block_of(a.count, comm.size(), comm.rank());
  ring.sendbuf = at(a.recvbuf, own, a.elem_size());
  allgather_ring(comm, ring);
}

}  // namespace collscope
