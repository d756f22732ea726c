// The vendor baseline: MPI_Reduce_scatter_block when the blocks are even,
// MPI_Reduce_scatter with the uneven block counts otherwise, on the communicator's own
// MPI communicator. Its schedule is the library's business, so its bytes are neither
// counted nor predicted.
// In place (recvbuf == sendbuf + offset of block r) it passes MPI_IN_PLACE, which takes
// the vector from the start of the receive buffer and leaves block r there: the call
// gets the send buffer as its receive buffer, and the result is then copied from the
// start of it to block r's place (one block, not overlapping: off(r) >= block(0)).
#include <vector>

#include "collscope/mpi_types.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/reduce_scatter.hpp"

namespace collscope {
namespace {

void call_mpi(Comm& comm, const void* send, void* recv, const CollArgs& a) {
  const int n = comm.size();
  const MPI_Datatype t = mpi_datatype(a.dtype);
  const MPI_Op op = mpi_op(a.op, a.dtype);
  if (a.count % static_cast<std::size_t>(n) == 0) {
    comm.step("MPI_Reduce_scatter_block", 0);
    const int each = static_cast<int>(a.count / static_cast<std::size_t>(n));
    return check_mpi(MPI_Reduce_scatter_block(send, recv, each, t, op, comm.mpi_comm()),
                 "MPI_Reduce_scatter_block");
  }
  std::vector<int> counts(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    counts[static_cast<std::size_t>(i)] = static_cast<int>(patterns::block_of(a.count, n, i).count);
  comm.step("MPI_Reduce_scatter", 0);
  check_mpi(MPI_Reduce_scatter(send, recv, counts.data(), t, op, comm.mpi_comm()),
        "MPI_Reduce_scatter");
}

}  // namespace

std::optional<std::string> reduce_scatter_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void reduce_scatter_mpi(Comm& comm, const CollArgs& a) {
  const std::size_t elem = a.elem_size();
  const patterns::Block own = patterns::block_of(a.count, comm.size(), comm.rank());
  if (a.recvbuf != patterns::at(a.sendbuf, own, elem))
    return call_mpi(comm, a.sendbuf, a.recvbuf, a);
  // In place: the caller's send buffer aliases the receive buffer, so it is writable.
  void* whole = const_cast<void*>(a.sendbuf);
  call_mpi(comm, MPI_IN_PLACE, whole, a);
  comm.reducer().copy(a.recvbuf, whole, own.count * elem);
}

}  // namespace collscope
