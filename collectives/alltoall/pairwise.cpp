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
#include "collscope/patterns/pairwise.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

Steps alltoall_pairwise(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t blk = p.count() * p.elem();
  auto at = [blk](int block) { return static_cast<std::size_t>(block) * blk; };
  const std::uint32_t tag = p.tag();
  StepBuilder s(p);
  // The input to read from: the send buffer, or its copy when the call is in place.
  BufRef in = Plan::send();
  if (p.in_place()) {
    in = p.scratch(at(n));
    co_yield s.copy(in, Plan::send(), at(n)).step("keep input", 0);
  } else {
    s.copy(Plan::recv(at(r)), Plan::send(at(r)), blk);  // in the first step
  }
  for (int k = 1; k <= patterns::pairwise_steps(n); ++k) {
    const int to = patterns::pairwise_send_peer(r, n, k);
    const int from = patterns::pairwise_recv_peer(r, n, k);
    s.recv(from, Plan::recv(at(from)), blk, tag).send(to, in.plus(at(to)), blk, tag);
    co_yield s.step("pairwise", k);
  }
  co_yield s.step("pairwise", n);  // N = 1: the own block's copy
}

}  // namespace collscope::schedules
