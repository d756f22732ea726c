// Halving-doubling allreduce (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005):
// recursive-halving reduce-scatter, then recursive-doubling allgather, on the largest
// power of two p <= N, with a fold for the other N - p ranks.
//
//   N = 6, p = 4, rem = 2:  ranks 0,2 fold into 1,3 (even -> odd);
//   virtual ranks v: 1->0, 3->1, 4->2, 5->3
//   halving,  d = 2:  v0<->v2, v1<->v3  exchange half the vector, reduce the kept half
//             d = 1:  v0<->v1, v2<->v3  exchange a quarter; v now owns block v of 4
//   doubling, d = 1 then d = 2: exchange what each holds, ranges doubling
//   unfold: 1 -> 0, 3 -> 2 send the whole result back
//
// Per rank in the power of two: the halving sends all but block v, the doubling sends
// back the ranges the halving kept; 2 (p-1)/p of the vector when blocks are even.
// Limits: none (any N via the fold, any count; empty ranges are skipped).
#include "collscope/allreduce.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/patterns/halving_doubling.hpp"

namespace collscope {
namespace {

using patterns::at;
using patterns::Block;
enum : std::uint32_t { kTagFold = 10, kTagHalving = 11, kTagDoubling = 12, kTagUnfold = 13 };


// Reduce-scatter among the p virtual ranks. `src` holds this rank's input: sendbuf,
// or recvbuf when the fold already reduced into it.
void halving(Comm& comm, const CollArgs& a, int vrank, const void* src) {
  const int n = comm.size(), p = patterns::largest_pof2_at_most(n);
  const std::size_t elem = a.elem_size();
  std::byte* incoming = static_cast<std::byte*>(comm.scratch(0, a.bytes()));
  int k = 0;
  for (const patterns::HdStep& s : patterns::hd_reduce_scatter_steps(n, vrank)) {
    comm.step("halving", k++);
    const Block out = patterns::block_range(a.count, p, s.send_first, s.send_len);
    const Block in = patterns::block_range(a.count, p, s.recv_first, s.recv_len);
    Request reqs[2] = {comm.irecv(s.peer, incoming, in.count * elem, kTagHalving),
                       comm.isend(s.peer, at(src, out, elem), out.count * elem, kTagHalving)};
    comm.wait(reqs[0]);
    comm.reducer().reduce(at(a.recvbuf, in, elem), at(src, in, elem), incoming, in.count,
                          a.dtype, a.op);
    comm.wait(reqs[1]);
    src = a.recvbuf;  // from now on the reduced halves live in recvbuf
  }
}

void doubling(Comm& comm, const CollArgs& a, int vrank) {
  const int n = comm.size(), p = patterns::largest_pof2_at_most(n);
  const std::size_t elem = a.elem_size();
  int k = 0;
  for (const patterns::HdStep& s : patterns::hd_allgather_steps(n, vrank)) {
    comm.step("doubling", k++);
    const Block out = patterns::block_range(a.count, p, s.send_first, s.send_len);
    const Block in = patterns::block_range(a.count, p, s.recv_first, s.recv_len);
    Request reqs[2] = {
        comm.irecv(s.peer, at(a.recvbuf, in, elem), in.count * elem, kTagDoubling),
        comm.isend(s.peer, at(a.recvbuf, out, elem), out.count * elem, kTagDoubling)};
    comm.wait_all(reqs);
  }
}

}  // namespace

void allreduce_halving_doubling(Comm& comm, const CollArgs& a) {
  const patterns::HdLayout l = patterns::hd_layout(comm.size(), comm.rank());
  const std::size_t bytes = a.bytes();
  if (comm.size() == 1) {
    if (!a.in_place()) comm.reducer().copy(a.recvbuf, a.sendbuf, bytes);
    return;
  }
  if (l.role == patterns::FoldRole::sender) {  // hand over the input, wait for the result
    comm.step("fold", 0);
    Request s = comm.isend(l.fold_peer, a.sendbuf, bytes, kTagFold);
    comm.wait(s);
    comm.step("unfold", 0);
    Request r = comm.irecv(l.fold_peer, a.recvbuf, bytes, kTagUnfold);
    comm.wait(r);
    return;
  }
  const void* src = a.sendbuf;
  if (l.role == patterns::FoldRole::absorber) {
    comm.step("fold", 0);
    void* partner = comm.scratch(1, bytes);
    Request r = comm.irecv(l.fold_peer, partner, bytes, kTagFold);
    comm.wait(r);
    comm.reducer().reduce(a.recvbuf, a.sendbuf, partner, a.count, a.dtype, a.op);
    src = a.recvbuf;
  }
  halving(comm, a, l.vrank, src);
  doubling(comm, a, l.vrank);
  if (l.role == patterns::FoldRole::absorber) {
    comm.step("unfold", 0);
    Request s = comm.isend(l.fold_peer, a.recvbuf, bytes, kTagUnfold);
    comm.wait(s);
  }
}

}  // namespace collscope
