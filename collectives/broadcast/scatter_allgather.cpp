// Scatter + allgather broadcast (van de Geijn; MPICH's MPIR_Bcast_intra_scatter_ring_
// allgather, Open MPI's "scatter_allgather_ring"). The root's vector is cut into N
// blocks (the uneven rule); a binomial scatter on virtual ranks v = (rank - root) mod N
// (patterns/binomial.hpp) leaves every rank holding the blocks of its subtree, block r
// among them; a ring allgather (in place) then gives everyone the rest.
//
//   N = 4, root 0, blocks A B C D:
//     scatter  step 0: 0 -CD-> 2            step 1: 0 -B-> 1, 2 -D-> 3
//              now 0:[A B C D] 1:[. B . .] 2:[. . C D] 3:[. . . D]
//     allgather (ring, steps 2..4): every rank receives the N-1 blocks but its own
//
// Every rank lands its blocks straight in its receive buffer, in real-rank order. With
// root != 0 a subtree's blocks can wrap past block N-1 to block 0 (root 1 of 4: the
// subtree v 2..3 is real 3, 0): such a subtree travels as two messages, one per piece.
// The edge to child v+m is used in step K-1-log2(m), K = ceil(log2 N), as in the
// binomial broadcast; the ring takes steps K .. K+N-2.
//
// Per rank: the scatter moves its subtree's blocks in (not the root) and each child's
// subtree's blocks out, one message per piece; the ring moves N-1 blocks each way.
// About 2 x the vector per rank instead of the binomial's log2 N x: the choice for
// large vectors. Limits: none (any N, count, root; count < N leaves blocks empty).
#include <array>

#include "../allgather/ring_steps.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

using patterns::Block;
using patterns::RankRun;

// The real-rank pieces of a virtual run of ranks: at most two blocks of the vector.
std::array<Block, 2> pieces(const Plan& p, RankRun virt) {
  const auto runs = patterns::real_runs(p.size(), p.args().root, virt);
  return {patterns::run_block(p.count(), p.size(), runs[0]),
          patterns::run_block(p.count(), p.size(), runs[1])};
}

}  // namespace

Steps broadcast_scatter_allgather(Plan& p) {
  const int n = p.size(), root = p.args().root;
  const int v = patterns::to_virtual(p.rank(), root, n);
  const int rounds = patterns::ceil_log2(n);
  const std::uint32_t piece_tag[2] = {p.tag(), p.tag()}, ring_tag = p.tag();
  StepBuilder s(p);
  // The root sends its blocks from its send buffer and copies it meanwhile.
  const Region from = v == 0 ? Region::send : Region::recv;
  if (v == 0) {
    s.copy(Plan::recv(), Plan::send(), p.count() * p.elem());
  } else {
    const int parent = patterns::to_real(patterns::binomial_parent(n, v), root, n);
    const auto mine = pieces(p, patterns::binomial_subtree(n, v));
    for (int i = 0; i < 2; ++i) s.recv(parent, p.recv_at(mine[i]), p.bytes(mine[i]), piece_tag[i]);
    co_yield s.step("scatter", rounds - 1 - patterns::ceil_log2(v & -v));
  }
  for (int c : patterns::binomial_children(n, v)) {
    const int child = patterns::to_real(c, root, n);
    const auto theirs = pieces(p, patterns::binomial_subtree(n, c));
    for (int i = 0; i < 2; ++i)
      s.send(child, BufRef{from, 0, theirs[i].offset * p.elem()}, p.bytes(theirs[i]), piece_tag[i]);
    co_yield s.step("scatter", rounds - 1 - patterns::ceil_log2(c - v));
  }
  co_yield s.step("scatter", rounds - 1);  // the root's copy when it has no children
  const Block own = patterns::block_of(p.count(), n, p.rank());
  auto ring = detail::ring_allgather_steps(p, p.rank(), p.recv_at(own), ring_tag, rounds);
  while (ring.next()) co_yield ring.value();
}

}  // namespace collscope::schedules
