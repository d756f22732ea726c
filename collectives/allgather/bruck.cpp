// Bruck allgather (Bruck, Ho, Kipnis, Upfal & Weathersby 1997; Open MPI's "bruck").
//
// In a buffer rotated so that its own block comes first, at step k (d = 2^k) rank r
// sends its first m = min(d, N-d) blocks to r-d and appends m blocks from r+d; after
// ceil(log2 N) steps a local rotation by r blocks puts every block in its place.
//   N = 5, rotated buffer of each rank (real block numbers):
//     start:    0:[0]          1:[1]          2:[2]          3:[3]          4:[4]
//     d=1:      0:[0 1]        1:[1 2]        2:[2 3]        3:[3 4]        4:[4 0]
//     d=2:      0:[0 1 2 3]    1:[1 2 3 4]    2:[2 3 4 0]    3:[3 4 0 1]    4:[4 0 1 2]
//     d=4 (m=1):0:[0 1 2 3 4]  1:[1 2 3 4 0]  ...            then rotate right by r blocks
//
// Each rank receives N-1 blocks in ceil(log2 N) messages; it sends the same amount of
// data (its first m blocks each step, N-1 blocks in all, counted with repeats).
// Limits: none on N or count; scratch of the whole vector for the rotated buffer, and
// the final rotation copies the vector once.
#include "collscope/patterns/bruck.hpp"
#include "collscope/schedules.hpp"

namespace collscope::schedules {

using patterns::Block;

Steps allgather_bruck(Plan& p) {
  const int n = p.size(), r = p.rank();
  const Block own = patterns::block_of(p.count(), n, r);
  StepBuilder s(p);
  if (n == 1) {
    co_yield s.copy(p.recv_at(own), Plan::send(), p.bytes(own)).step("place", 0);
    co_return;
  }
  const BufRef rotated = p.scratch(p.count() * p.elem());
  const std::uint32_t tag = p.tag();
  const int steps = patterns::bruck_num_steps(n);
  for (int k = 0; k < steps; ++k) {
    const patterns::BruckStep b = patterns::bruck_step(r, n, k);
    const Block out = patterns::rotated_range(p.count(), n, r, 0, b.nblocks);
    const Block in = patterns::rotated_range(p.count(), n, r, b.distance, b.nblocks);
    s.recv(b.recv_from, rotated.plus(in.offset * p.elem()), p.bytes(in), tag);
    // Step 0 sends just the own block, straight from the send buffer, and copies it
    // into the rotated buffer while it travels.
    s.send(b.send_to, k == 0 ? Plan::send() : rotated, p.bytes(out), tag);
    if (k == 0) s.copy(rotated, Plan::send(), p.bytes(out));
    co_yield s.step("bruck", k);
  }
  // Unrotate: the rotated buffer is blocks r, r+1, ..., N-1, 0, ..., r-1. (A step of its
  // own: in place, it overwrites the own block the first step's send may still read.)
  const std::size_t start = own.offset * p.elem(), total = p.count() * p.elem();
  s.copy(Plan::recv(start), rotated, total - start).copy(Plan::recv(), rotated.plus(total - start), start);
  co_yield s.step("unrotate", steps);
}

}  // namespace collscope::schedules
