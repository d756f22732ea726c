// Recursive halving reduce-scatter (Thakur, Rabenseifner & Gropp 2005), any N through
// the fold of halving_doubling.hpp.
//
// Power of two: at distance d = N/2, N/4, ..., 1 rank r exchanges with r^d: it sends
// the half of its current block range on r^d's side, receives its own half and reduces.
//   N = 4, blocks A B C D:
//     d=2: 0<->2, 1<->3: 0,1 keep A B, 2,3 keep C D (two contributions each)
//     d=1: 0<->1, 2<->3: rank r keeps block r, now with all four contributions
//
// Other N: p = largest power of two <= N, rem = N - p; for v < rem, rank 2v sends its
// whole vector to 2v+1, which reduces it into its own and stands for both as virtual
// rank v among p (its virtual block is real blocks 2v and 2v+1, recursive_doubling.hpp);
// after the halving 2v+1 sends block 2v back to rank 2v.
//   N = 3, p = 2: fold 0->1 (A B C); halving d=1: 1 keeps A B, 2 keeps C;
//                 unfold 1->0: block A.
//
// A virtual rank sends and receives (p-1)/p of the vector in log2 p messages each way;
// folded pairs add the whole vector one way and a block the other.
// Limits: none (any N, any count; empty ranges are skipped); scratch of twice the
// vector on the ranks that take part in the halving (checked against --max-scratch).
#include "collscope/scratch_limit.hpp"
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/reduce_scatter.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;

enum : std::uint32_t { kTagFold = 1, kTagHalving = 2, kTagUnfold = 3 };

// Rank 2v (folded out): hand the whole vector over, then take block 2v back.
void run_folded_out(Comm& comm, const CollArgs& a, int partner) {
  const Block own = patterns::block_of(a.count, comm.size(), comm.rank());
  comm.step("fold", 0);
  Request s = comm.isend(partner, a.sendbuf, a.bytes(), kTagFold);
  comm.wait(s);  // in place the result lands inside the send buffer: send first
  comm.step("unfold", 0);
  Request r = comm.irecv(partner, a.recvbuf, own.count * a.elem_size(), kTagUnfold);
  comm.wait(r);
}

// Rank 2v+1: sum = own input op the partner's vector.
void receive_fold(Comm& comm, const CollArgs& a, int partner, void* sum, void* incoming) {
  comm.step("fold", 0);
  Request r = comm.irecv(partner, incoming, a.bytes(), kTagFold);
  comm.wait(r);
  comm.reducer().reduce(sum, a.sendbuf, incoming, a.count, a.dtype, a.op);
}

// Halving among the virtual ranks; `src` holds the input (sendbuf, or `sum` after the
// fold), the kept ranges are reduced into `sum`.
void halving(Comm& comm, const CollArgs& a, int vrank, const void* src, std::byte* sum,
             std::byte* incoming) {
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  int k = 0;
  for (const patterns::HdStep& s : patterns::hd_reduce_scatter_steps(n, vrank)) {
    comm.step("halving", k++);
    const Block out = patterns::folded_range(a.count, n, s.send_first, s.send_len);
    const Block in = patterns::folded_range(a.count, n, s.recv_first, s.recv_len);
    Request reqs[2] = {comm.irecv(s.peer, incoming, in.count * elem, kTagHalving),
                       comm.isend(s.peer, at(src, out, elem), out.count * elem, kTagHalving)};
    comm.wait(reqs[0]);
    comm.reducer().reduce(at(sum, in, elem), at(src, in, elem), incoming, in.count, a.dtype,
                          a.op);
    comm.wait(reqs[1]);
    src = sum;
  }
}

}  // namespace

std::optional<std::string> reduce_scatter_halving_constraint(int nranks, const CollArgs& a) {
  return scratch_constraint("reduce_scatter", "halving", 2 * a.bytes(), nranks, a);
}

void reduce_scatter_halving(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = a.elem_size();
  if (n == 1) return comm.reducer().copy(a.recvbuf, a.sendbuf, a.bytes());
  const patterns::HdLayout l = patterns::hd_layout(n, r);
  if (l.role == patterns::FoldRole::sender) return run_folded_out(comm, a, l.fold_peer);
  std::byte* sum = static_cast<std::byte*>(comm.scratch(0, a.bytes()));
  std::byte* incoming = static_cast<std::byte*>(comm.scratch(1, a.bytes()));
  const void* src = a.sendbuf;
  if (l.role == patterns::FoldRole::absorber) {
    receive_fold(comm, a, l.fold_peer, sum, incoming);
    src = sum;
  }
  halving(comm, a, l.vrank, src, sum, incoming);
  Request s;
  if (l.role == patterns::FoldRole::absorber) {
    comm.step("unfold", 0);
    const Block theirs = patterns::block_of(a.count, n, l.fold_peer);
    s = comm.isend(l.fold_peer, at(sum, theirs, elem), theirs.count * elem, kTagUnfold);
  }
  const Block own = patterns::block_of(a.count, n, r);
  comm.reducer().copy(a.recvbuf, at(sum, own, elem), own.count * elem);
  comm.wait(s);
}

}  // namespace collscope
