// Direct allreduce: the seeds' full-mesh "ReduceBroadcast". Every rank sends its whole
// vector to every other rank and reduces the N vectors itself.
//
//   N = 3:   0 -> 1, 0 -> 2,   1 -> 0, 1 -> 2,   2 -> 0, 2 -> 1   (one round)
//   each rank: result = x0 op x1 op x2, always in rank order, so every rank computes
//   the same bits even where the op is not associative in floating point.
//
// Every rank sends and receives (N-1) whole vectors: one round of latency, N/2 times
// the bytes of the ring. Limits: needs (N-1) x the vector of scratch per rank.
#include <string>

#include "collscope/scratch_limit.hpp"
#include "collscope/allreduce.hpp"

namespace collscope {
namespace {
enum : std::uint32_t { kTagDirect = 3 };
}

std::optional<std::string> allreduce_direct_constraint(int nranks, const CollArgs& a) {
  const std::size_t need = static_cast<std::size_t>(nranks - 1) * a.bytes();
  return scratch_constraint("allreduce", "direct", need, nranks, a);
}

void allreduce_direct(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t bytes = a.bytes();
  std::byte* inbox = static_cast<std::byte*>(comm.scratch(0, (n - 1) * bytes));
  // Peer p's vector lands in slot p (ranks above r shift down one: r has no slot).
  auto slot = [&](int p) { return inbox + static_cast<std::size_t>(p < r ? p : p - 1) * bytes; };
  // In place, the rank-order reduction overwrites our input before its turn: keep a copy.
  const void* input = a.sendbuf;
  if (a.in_place() && n > 1) {
    void* copy = comm.scratch(1, bytes);
    comm.reducer().copy(copy, a.sendbuf, bytes);
    input = copy;
  }

  comm.step("exchange", 0);
  std::vector<Request> reqs;
  reqs.reserve(2 * static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    reqs.push_back(comm.irecv(p, slot(p), bytes, kTagDirect));
    reqs.push_back(comm.isend(p, input, bytes, kTagDirect));
  }
  comm.wait_all(reqs);

  comm.step("reduce", 0);
  auto vec = [&](int p) -> const void* { return p == r ? input : slot(p); };
  if (n == 1) {
    if (!a.in_place()) comm.reducer().copy(a.recvbuf, a.sendbuf, bytes);
    return;
  }
  comm.reducer().reduce(a.recvbuf, vec(0), vec(1), a.count, a.dtype, a.op);
  for (int p = 2; p < n; ++p)
    comm.reducer().reduce(a.recvbuf, a.recvbuf, vec(p), a.count, a.dtype, a.op);
}

}  // namespace collscope
