// Recursive doubling allgather (Thakur, Rabenseifner & Gropp 2005), any N through a fold.
//
// Power of two: at distance d = 1, 2, 4, ... rank r exchanges with r^d everything it
// holds (its aligned group of d blocks) and the groups double.
//   N = 4:   d=1: 0<->1, 2<->3 swap one block     ->  0,1: [A B . .]   2,3: [. . C D]
//            d=2: 0<->2, 1<->3 swap two blocks    ->  everyone: [A B C D]
//
// Other N: the fold of halving_doubling.hpp (recursive_doubling.hpp for the blocks).
// p = largest power of two <= N, rem = N - p; for v < rem, rank 2v gives its block to
// rank 2v+1, which stands for both in the doubling among p virtual ranks (its virtual
// block is real blocks 2v and 2v+1); at the end 2v+1 sends 2v everything but block 2v
// (two messages: the blocks before it and the blocks after it).
//   N = 3, p = 2:  fold 0->1 (A);  doubling d=1: 1<->2 swap [A B] and [C];
//                  unfold 1->0: nothing before A, [B C] after it.
// MPICH handles other N without a fold by re-sending missed groups inside the doubling;
// the fold costs two extra steps but keeps the schedule the plain power-of-two one.
//
// In the doubling a virtual rank sends and receives (p-1)/p of the vector in log2 p
// messages each way; folded ranks add their block and the rest of the vector.
// Limits: none (any N, any count; empty ranges are skipped).
#include "collscope/allgather.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "detail.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;

// Rank 2v (folded out): hand the block over, then take everything else back.
void run_folded_out(Comm& comm, const CollArgs& a, int partner) {
  const std::size_t elem = a.elem_size();
  const Block own = patterns::block_of(a.count, comm.size(), comm.rank());
  comm.step("fold", 0);
  Request s = comm.isend(partner, a.sendbuf, own.count * elem, kAllgatherTag);
  comm.wait(s);
  comm.step("unfold", 0);
  const Block after = {own.offset + own.count, a.count - own.offset - own.count};
  Request r[2] = {comm.irecv(partner, a.recvbuf, own.offset * elem, kAllgatherTag),
                  comm.irecv(partner, at(a.recvbuf, after, elem), after.count * elem,
                             kAllgatherTag)};
  comm.wait_all(r);
}

void doubling(Comm& comm, const CollArgs& a, int vrank) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  int k = 0;
  for (const patterns::HdStep& s : patterns::hd_allgather_steps(n, vrank)) {
    comm.step("doubling", k++);
    const Block out = patterns::folded_range(a.count, n, s.send_first, s.send_len);
    const Block in = patterns::folded_range(a.count, n, s.recv_first, s.recv_len);
    Request reqs[2] = {
        comm.irecv(s.peer, at(a.recvbuf, in, elem), in.count * elem, kAllgatherTag),
        comm.isend(s.peer, at(a.recvbuf, out, elem), out.count * elem, kAllgatherTag)};
    comm.wait_all(reqs);
  }
}

// Rank 2v+1 (absorber): the partner's block is block r-1, just before its own.
void receive_fold(Comm& comm, const CollArgs& a, int partner) {
  const Block theirs = patterns::block_of(a.count, comm.size(), partner);
  comm.step("fold", 0);
  Request r = comm.irecv(partner, at(a.recvbuf, theirs, a.elem_size()),
                         theirs.count * a.elem_size(), kAllgatherTag);
  comm.wait(r);
}

void send_unfold(Comm& comm, const CollArgs& a, int partner) {
  const std::size_t elem = a.elem_size();
  const Block theirs = patterns::block_of(a.count, comm.size(), partner);
  const Block after = {theirs.offset + theirs.count, a.count - theirs.offset - theirs.count};
  comm.step("unfold", 0);
  Request s[2] = {comm.isend(partner, a.recvbuf, theirs.offset * elem, kAllgatherTag),
                  comm.isend(partner, at(a.recvbuf, after, elem), after.count * elem,
                             kAllgatherTag)};
  comm.wait_all(s);
}

}  // namespace

void allgather_recursive_doubling(Comm& comm, const CollArgs& a) {
  allgather_detail::place_own_block(comm, a);
  if (comm.size() == 1) return;
  const patterns::HdLayout l = patterns::hd_layout(comm.size(), comm.rank());
  if (l.role == patterns::FoldRole::sender) return run_folded_out(comm, a, l.fold_peer);
  if (l.role == patterns::FoldRole::absorber) receive_fold(comm, a, l.fold_peer);
  doubling(comm, a, l.vrank);
  if (l.role == patterns::FoldRole::absorber) send_unfold(comm, a, l.fold_peer);
}

}  // namespace collscope
