// Recursive doubling allgather (Thakur, Rabenseifner & Gropp 2005), any N through a fold.
//
// Power of two: at distance d = 1, 2, 4, ... rank r exchanges with r^d everything it
// holds (its aligned group of d blocks) and the groups double.
//   N = 4:   d=1: 0<->1, 2<->3 swap one block     ->  0,1: [A B . .]   2,3: [. . C D]
//            d=2: 0<->2, 1<->3 swap two blocks    ->  everyone: [A B C D]
//
// Other N: the fold of patterns/halving_doubling.hpp (recursive_doubling.hpp for the
// blocks). p = largest power of two <= N, rem = N - p; for v < rem, rank 2v gives its
// block to rank 2v+1 (step 0), which stands for both in the doubling among p virtual
// ranks (its virtual block is real blocks 2v and 2v+1, steps 1..log2 p); at the end
// 2v+1 sends 2v everything but block 2v (two messages: the blocks before it and the
// blocks after it).
//   N = 3, p = 2:  step 0 fold 0->1 (A);  step 1 doubling: 1<->2 swap [A B] and [C];
//                  step 2 unfold 1->0: nothing before A, [B C] after it.
// MPICH handles other N without a fold by re-sending missed groups inside the doubling;
// the fold costs two extra steps but keeps the schedule the plain power-of-two one.
//
// In the doubling a virtual rank sends and receives (p-1)/p of the vector in log2 p
// messages each way; folded ranks add their block and the rest of the vector.
// Limits: none (any N, any count; empty ranges are skipped).
#include "collscope/patterns/recursive_doubling.hpp"
#include "collscope/schedules.hpp"
#include "doubling_steps.hpp"

namespace collscope::detail {

using patterns::Block;

Steps doubling_steps(Plan& p, int vrank, patterns::HdBlocks blocks, std::uint32_t tag,
                     int first_step) {
  const int n = p.size();
  StepBuilder s(p);
  int k = first_step;
  for (const patterns::HdStep& h : patterns::hd_allgather_steps(n, vrank)) {
    const Block out = patterns::hd_range(p.count(), n, blocks, h.send_first, h.send_len);
    const Block in = patterns::hd_range(p.count(), n, blocks, h.recv_first, h.recv_len);
    s.recv(h.peer, p.recv_at(in), p.bytes(in), tag).send(h.peer, p.recv_at(out), p.bytes(out), tag);
    co_yield s.step("doubling", k);
    ++k;
  }
}

}  // namespace collscope::detail

namespace collscope::schedules {

using patterns::Block;

Steps allgather_recursive_doubling(Plan& p) {
  const int n = p.size(), r = p.rank();
  const Block own = patterns::block_of(p.count(), n, r);
  StepBuilder s(p);
  s.copy(p.recv_at(own), Plan::send(), p.bytes(own));  // placed in the first step
  if (n == 1) {
    co_yield s.step("place", 0);
    co_return;
  }
  const patterns::HdLayout l = patterns::hd_layout(n, r);
  const int steps = static_cast<int>(patterns::hd_allgather_steps(n, 0).size());
  const std::uint32_t tag = p.tag();
  auto rest_of = [&](Block b) {  // everything but block b: before it, and after it
    return std::pair<Block, Block>{{0, b.offset}, {b.offset + b.count, p.count() - b.offset - b.count}};
  };
  if (l.role == patterns::FoldRole::sender) {  // hand the block over, take the rest back
    co_yield s.send(l.fold_peer, Plan::send(), p.bytes(own), tag).step("fold", 0);
    const auto [before, after] = rest_of(own);
    s.recv(l.fold_peer, p.recv_at(before), p.bytes(before), tag).recv(l.fold_peer, p.recv_at(after), p.bytes(after), tag);
    co_yield s.step("unfold", steps + 1);
    co_return;
  }
  if (l.role == patterns::FoldRole::absorber) {  // the partner's block is block r-1
    const Block theirs = patterns::block_of(p.count(), n, l.fold_peer);
    s.recv(l.fold_peer, p.recv_at(theirs), p.bytes(theirs), tag);
  }
  co_yield s.step("fold", 0);
  auto doubling = detail::doubling_steps(p, l.vrank, patterns::HdBlocks::folded, tag, 1);
  while (doubling.next()) co_yield doubling.value();
  if (l.role == patterns::FoldRole::absorber) {
    const auto [before, after] = rest_of(patterns::block_of(p.count(), n, l.fold_peer));
    s.send(l.fold_peer, p.recv_at(before), p.bytes(before), tag).send(l.fold_peer, p.recv_at(after), p.bytes(after), tag);
    co_yield s.step("unfold", steps + 1);
  }
}

}  // namespace collscope::schedules
