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
// Limits: none on N or count; scratch of the whole vector for the rotated buffer
// (checked against --max-scratch), and the final rotation copies the vector once.
#include "collscope/scratch_limit.hpp"
#include "collscope/allgather.hpp"
#include "collscope/patterns/bruck.hpp"
#include "detail.hpp"

namespace collscope {
namespace {

using patterns::Block;

void exchange(Comm& comm, const CollArgs& a, std::byte* rotated) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = a.elem_size();
  for (int k = 0; k < patterns::bruck_num_steps(n); ++k) {
    comm.step("bruck", k);
    const patterns::BruckStep s = patterns::bruck_step(r, n, k);
    const Block out = patterns::rotated_range(a.count, n, r, 0, s.nblocks);
    const Block in = patterns::rotated_range(a.count, n, r, s.distance, s.nblocks);
    // Step 0 sends just the own block: straight from the send buffer, copied into the
    // rotated buffer while it travels (copying first delays the send by the copy).
    const void* src = k == 0 ? a.sendbuf : rotated;
    Request reqs[2] = {comm.irecv(s.recv_from, rotated + in.offset * elem, in.count * elem,
                                  kAllgatherTag),
                       comm.isend(s.send_to, src, out.count * elem, kAllgatherTag)};
    if (k == 0) comm.reducer().copy(rotated, a.sendbuf, out.count * elem);
    comm.wait_all(reqs);
  }
}

// rotated = blocks r, r+1, ..., N-1, 0, ..., r-1: its first count - off(r) elements go
// to recvbuf from off(r) on, the rest to the start of recvbuf.
void unrotate(Comm& comm, const CollArgs& a, const std::byte* rotated) {
  const std::size_t elem = a.elem_size();
  const std::size_t start = patterns::block_of(a.count, comm.size(), comm.rank()).offset;
  std::byte* recv = static_cast<std::byte*>(a.recvbuf);
  comm.reducer().copy(recv + start * elem, rotated, (a.count - start) * elem);
  comm.reducer().copy(recv, rotated + (a.count - start) * elem, start * elem);
}

}  // namespace

std::optional<std::string> allgather_bruck_constraint(int nranks, const CollArgs& a) {
  return scratch_constraint("allgather", "bruck", a.bytes(), nranks, a);
}

void allgather_bruck(Comm& comm, const CollArgs& a) {
  if (comm.size() == 1) return allgather_detail::place_own_block(comm, a);
  std::byte* rotated = static_cast<std::byte*>(comm.scratch(0, a.bytes()));
  exchange(comm, a, rotated);
  unrotate(comm, a, rotated);
}

}  // namespace collscope
