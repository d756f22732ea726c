// The binomial reduce's steps, shared by reduce_binomial (the whole vector in one
// segment) and reduce_pipelined (segments of --segment bytes).
//
// On virtual ranks v = (rank - root) mod N (patterns/binomial.hpp):
//
//   N = 6, root 0:             segment c: step c:   1 -> 0, 3 -> 2, 5 -> 4
//     0 -+- 4 - 5                         step c+1: 2 -> 0   (x2+x3)
//        +- 2 - 3                         step c+2: 4 -> 0   (x4+x5)
//        +- 1                  rank 0: ((x0+x1) + (x2+x3)) + (x4+x5)
//   child v+m sends segment c in step c + log2(m); each rank adds what arrives while the
//   next step's segments arrive (nearest child first), and sends its sum in step
//   c + log2(lowbit v), after its last child's.
//
// The nearest child's segment is received straight into the partial sum and added in
// place (acc = input + acc): no inbox to read back, which is what makes a 2-rank reduce
// as fast as the vendor's linear one. Farther children's segments land in inboxes, and
// so does every child's at an in-place root, whose receive buffer holds its input.
// Scratch: the partial sums (not at the root, which sums into its receive buffer) and
// two segment inboxes per child but the nearest.
#include <vector>

#include "binomial_steps.hpp"
#include "collscope/patterns/binomial.hpp"
#include "collscope/patterns/bits.hpp"

namespace collscope::detail {
namespace {

using patterns::Block;

}  // namespace

Steps binomial_reduce_steps(Plan& p, std::size_t seg) {
  const int n = p.size(), root = p.args().root;
  const int v = patterns::to_virtual(p.rank(), root, n);
  std::vector<int> children = patterns::binomial_children(n, v);  // farthest first
  StepBuilder s(p);
  if (children.empty() && v == 0) {  // a lone root
    co_yield s.copy(Plan::recv(), Plan::send(), p.count() * p.elem()).step("copy", 0);
    co_return;
  }
  seg = std::max<std::size_t>(1, seg);
  const long segments = static_cast<long>(patterns::num_segments(p.count(), seg));
  const std::size_t seg_bytes = std::min(seg, p.count()) * p.elem();
  const std::uint32_t tag = p.tag();
  // Partial sums: the root's receive buffer, else scratch (leaves send their input).
  const BufRef acc = v == 0 ? Plan::recv() : children.empty() ? Plan::send() : p.scratch(p.count() * p.elem());
  // In place, the root's receive buffer holds its input: every child goes to an inbox.
  const bool direct = !children.empty() && !(v == 0 && p.in_place());
  const std::size_t inboxes = 2 * (children.size() - (direct ? 1 : 0));
  const BufRef inbox = inboxes == 0 ? BufRef{} : p.scratch(inboxes * seg_bytes);
  const int parent = v == 0 ? -1 : patterns::to_real(patterns::binomial_parent(n, v), root, n);
  const int send_shift = v == 0 ? 0 : patterns::ceil_log2(v & -v);
  const int last = static_cast<int>(segments) + (children.empty() ? 0 : patterns::ceil_log2(children.front() - v)) + send_shift;
  for (int t = 0; t <= last; ++t) {
    bool reduces = false;
    for (std::size_t i = children.size(); i-- > 0;) {  // nearest child first
      const int shift = patterns::ceil_log2(children[i] - v);
      const long c = t - shift;
      if (c < 0 || c >= segments) continue;
      const Block b = patterns::segment_of(p.count(), seg, static_cast<std::size_t>(c));
      const BufRef sum = acc.plus(b.offset * p.elem());
      const bool first = i + 1 == children.size();  // the nearest child starts the sum
      const std::size_t slot = children.size() - 1 - i - (direct ? 1 : 0);
      const BufRef in = first && direct ? sum : inbox.plus((slot * 2 + static_cast<std::size_t>(c % 2)) * seg_bytes);
      s.recv(patterns::to_real(children[i], root, n), in, p.bytes(b), tag);
      s.reduce(sum, first ? p.send_at(b) : sum, in, p.bytes(b));
      reduces = true;
    }
    const long c = t - send_shift;
    if (parent >= 0 && c >= 0 && c < segments) {
      const Block b = patterns::segment_of(p.count(), seg, static_cast<std::size_t>(c));
      s.send(parent, acc.plus(b.offset * p.elem()), p.bytes(b), tag);
    }
    co_yield s.step(reduces ? "reduce" : "send", t, reduces);
  }
}

}  // namespace collscope::detail
