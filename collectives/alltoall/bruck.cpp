// Bruck all-to-all: ceil(log2 N) steps instead of N-1, paid for in bytes (Bruck, Ho,
// Kipnis, Upfal, Weathersby, IEEE TPDS 8(11) 1997; MPICH's short-message all-to-all).
//
//   N = 4, rank r, work position i holds the block addressed i ranks ahead:
//   rotate:  work = [r>r  r>r+1  r>r+2  r>r+3]
//   step 0:  positions 1, 3 (bit 0 set) go to r+1; the same positions come from r-1
//            work = [r>r  r-1>r  r>r+2  r-1>r+2]
//   step 1:  positions 2, 3 (bit 1 set) go to r+2; the same positions come from r-2
//            work = [r>r  r-1>r  r-2>r  r-3>r]
//   rotate back: position i -> receive block r-i.
//
// Each rank sends ceil(log2 N) messages, message k holding the blocks whose position has
// bit k set: sum over i < N of popcount(i) blocks in all, against N-1 for pairwise
// (equal for N <= 3; N = 4: 4 blocks in 2 messages against 3 in 3; N = 8: 12 in 3
// against 7 in 7). Fewer messages, more bytes: a latency algorithm for small blocks.
// Limits: needs N + 2 x (largest message) blocks of scratch per rank (the rotated
// work buffer and the packed message each way); pack and unpack copies at every step.
#include "collscope/scratch_limit.hpp"
#include "collscope/alltoall.hpp"
#include "collscope/patterns/alltoall_bruck.hpp"
#include "blocks.hpp"

namespace collscope {
namespace {

enum : std::uint32_t { kTagBruck = 12 };

struct Blocks {
  std::byte* base;
  std::size_t blk;
  std::byte* at(int i) const { return base + static_cast<std::size_t>(i) * blk; }
};

// Work position i (1..N-1) takes send block r+i; position 0 (our own block) never moves.
void rotate_in(Comm& comm, const CollArgs& a, Blocks work) {
  const int n = comm.size(), r = comm.rank();
  const auto* in = static_cast<const std::byte*>(a.sendbuf);
  for (int i = 1; i < n; ++i) {
    const auto block = static_cast<std::size_t>(patterns::a2a_bruck_first_block(r, n, i));
    comm.reducer().copy(work.at(i), in + block * work.blk, work.blk);
  }
}

// Receive block r-i takes work position i; our own block goes straight across.
void rotate_out(Comm& comm, const CollArgs& a, Blocks work) {
  const int n = comm.size(), r = comm.rank();
  const Blocks out{static_cast<std::byte*>(a.recvbuf), work.blk};
  if (!a.in_place())
    comm.reducer().copy(out.at(r), static_cast<const std::byte*>(a.sendbuf) +
                                       static_cast<std::size_t>(r) * work.blk,
                        work.blk);
  for (int i = 1; i < n; ++i)
    comm.reducer().copy(out.at(patterns::a2a_bruck_last_block(r, n, i)), work.at(i), work.blk);
}

enum class Direction { pack, unpack };

// Moves the positions sent at `step` between the work buffer and the packed message,
// in increasing position order on both sides of the exchange.
void copy_moved(Comm& comm, Blocks work, Blocks msg, int step, Direction d) {
  int packed = 0;
  for (int i = 1; i < comm.size(); ++i) {
    if (!patterns::a2a_bruck_moves(i, step)) continue;
    if (d == Direction::pack)
      comm.reducer().copy(msg.at(packed), work.at(i), work.blk);
    else
      comm.reducer().copy(work.at(i), msg.at(packed), work.blk);
    ++packed;
  }
}

}  // namespace

std::optional<std::string> alltoall_bruck_constraint(int nranks, const CollArgs& a) {
  const int blocks = nranks + 2 * patterns::a2a_bruck_max_blocks(nranks);
  return scratch_constraint("alltoall", "bruck", detail::alltoall_blocks_bytes(a, blocks),
                            nranks, a);
}

void alltoall_bruck(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t blk = detail::alltoall_block_bytes(a);
  const std::size_t msg_bytes =
      detail::alltoall_blocks_bytes(a, patterns::a2a_bruck_max_blocks(n));
  const std::size_t work_bytes = detail::alltoall_blocks_bytes(a, n);
  const Blocks work{static_cast<std::byte*>(comm.scratch(0, work_bytes)), blk};
  const Blocks out_msg{static_cast<std::byte*>(comm.scratch(1, msg_bytes)), blk};
  const Blocks in_msg{static_cast<std::byte*>(comm.scratch(2, msg_bytes)), blk};
  rotate_in(comm, a, work);
  for (int k = 0; k < patterns::a2a_bruck_steps(n); ++k) {
    comm.step("bruck", k);
    const std::size_t bytes =
        detail::alltoall_blocks_bytes(a, patterns::a2a_bruck_blocks_at(n, k));
    copy_moved(comm, work, out_msg, k, Direction::pack);
    Request reqs[2] = {
        comm.irecv(patterns::a2a_bruck_recv_peer(r, n, k), in_msg.base, bytes, kTagBruck),
        comm.isend(patterns::a2a_bruck_send_peer(r, n, k), out_msg.base, bytes, kTagBruck)};
    comm.wait_all(reqs);
    copy_moved(comm, work, in_msg, k, Direction::unpack);
  }
  rotate_out(comm, a, work);
}

}  // namespace collscope
