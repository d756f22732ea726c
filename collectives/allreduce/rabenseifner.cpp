// Rabenseifner's allreduce as Open MPI runs it (coll_tuned allreduce algorithm 6,
// "rabenseifner", ompi_coll_base_allreduce_intra_redscat_allgather): a reduce-scatter by
// recursive vector halving with the distance doubling (nearest partner first), then an
// allgather by recursive vector doubling with the distance halving, on the largest power
// of two p <= N. It differs from halving_doubling (MPICH's order, farthest partner
// first, and a fold of whole vectors) in who gets which half, so its traffic matrix
// differs although every rank sends as many bytes:
//
//   N = 6, p = 4, rem = 2. Fold: 0 and 1, 2 and 3 swap halves (the even rank keeps the
//   first count/2 elements), the odd one sends its reduced half back and sits out;
//   virtual ranks: 0->0, 2->1, 4->2, 5->3
//   steps 0-1  fold        0<->1, 2<->3: halves; 1 -> 0, 3 -> 2: the second half, reduced
//   step 2     d = 1       v0<->v1 (0<->2), v2<->v3 (4<->5): the lower keeps the first
//                          floor(w/2) elements of the window w, sends the rest
//   step 3     d = 2       v0<->v2 (0<->4), v1<->v3 (2<->5): a quarter each way
//   steps 4-5  doubling    d = 2, then d = 1: each sends what it kept
//   step 6     unfold      0 -> 1, 2 -> 3: the whole result
//
// Per rank in the power of two: 2 (p-1)/p of the vector with even blocks, in 2 log2 p
// messages (plus, on folded pairs, the halves and the whole result). Open MPI runs its
// basic linear allreduce instead when count < p; this schedule does not (its empty
// parts send nothing). Limits: commutative ops. Scratch: half the vector, rounded up.
#include <vector>

#include "collscope/lone_rank.hpp"
#include "collscope/patterns/bits.hpp"
#include "collscope/patterns/halving_doubling.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {
namespace {

using patterns::Block;

// One exchange of the halving: the peer, the part of the window sent and the part kept.
struct Halving {
  int peer;
  Block sent, kept;
};

// The halving's exchanges of virtual rank v: the window starts as the whole vector.
std::vector<Halving> halvings(std::size_t count, int pof2, int rem, int v) {
  std::vector<Halving> out;
  Block window{0, count};
  for (int d = 1; d < pof2; d *= 2) {
    const int vpeer = v ^ d, peer = vpeer < rem ? 2 * vpeer : vpeer + rem;
    const Block low{window.offset, window.count / 2};
    const Block high{window.offset + low.count, window.count - low.count};
    const bool lower = v < vpeer;
    out.push_back({peer, lower ? high : low, lower ? low : high});
    window = out.back().kept;
  }
  return out;
}

}  // namespace

namespace {

// N >= 2 (a lone rank copies: lone_rank.hpp).
Steps two_or_more(Plan& p) {
  const int n = p.size(), r = p.rank();
  const std::size_t bytes = p.count() * p.elem();
  StepBuilder s(p);
  const int pof2 = patterns::largest_pof2_at_most(n), rem = n - pof2, rounds = patterns::ceil_log2(pof2);
  const Block left{0, p.count() / 2}, right{p.count() / 2, p.count() - p.count() / 2};
  const BufRef incoming = p.scratch(p.bytes(right));
  const std::uint32_t fold_tag = p.tag(), halving_tag = p.tag(), doubling_tag = p.tag(),
                      unfold_tag = p.tag();
  const bool folded = r < 2 * rem;
  if (folded && r % 2 == 1) {  // swaps halves, reduces the second, hands it over, sits out
    s.recv(r - 1, incoming, p.bytes(right), fold_tag).send(r - 1, p.send_at(left), p.bytes(left), fold_tag);
    s.reduce(p.recv_at(right), p.send_at(right), incoming, p.bytes(right));
    co_yield s.step("fold", 0);
    co_yield s.send(r - 1, p.recv_at(right), p.bytes(right), fold_tag).step("fold: second half", 1);
    co_yield s.recv(r - 1, Plan::recv(), bytes, unfold_tag).step("unfold", 2 * rounds + 2);
    co_return;
  }
  bool held_in_send = !p.in_place();  // where this rank's partial result lives
  if (folded) {  // the even rank of a pair: keeps the first half, gets the second reduced
    s.recv(r + 1, incoming, p.bytes(left), fold_tag).send(r + 1, p.send_at(right), p.bytes(right), fold_tag);
    s.reduce(p.recv_at(left), p.send_at(left), incoming, p.bytes(left));
    co_yield s.step("fold", 0);
    co_yield s.recv(r + 1, p.recv_at(right), p.bytes(right), fold_tag).step("fold: second half", 1);
    held_in_send = false;
  }
  const int v = folded ? r / 2 : r - rem;
  const std::vector<Halving> steps = halvings(p.count(), pof2, rem, v);
  int k = 2;
  for (const Halving& h : steps) {
    const BufRef out = held_in_send ? p.send_at(h.sent) : p.recv_at(h.sent);
    const BufRef mine = held_in_send ? p.send_at(h.kept) : p.recv_at(h.kept);
    s.recv(h.peer, incoming, p.bytes(h.kept), halving_tag).send(h.peer, out, p.bytes(h.sent), halving_tag);
    s.reduce(p.recv_at(h.kept), mine, incoming, p.bytes(h.kept));
    co_yield s.step("halving", k);
    ++k;
    held_in_send = false;
  }
  for (auto h = steps.rbegin(); h != steps.rend(); ++h) {
    s.recv(h->peer, p.recv_at(h->sent), p.bytes(h->sent), doubling_tag);
    s.send(h->peer, p.recv_at(h->kept), p.bytes(h->kept), doubling_tag);
    co_yield s.step("doubling", k);
    ++k;
  }
  if (folded) co_yield s.send(r + 1, Plan::recv(), bytes, unfold_tag).step("unfold", 2 * rounds + 2);
}

}  // namespace

Steps allreduce_rabenseifner(Plan& p) { return detail::alone_or(p, two_or_more); }

}  // namespace collscope::schedules
