// The vendor baseline: MPI_Allgather when the blocks are even, MPI_Allgatherv with the
// uneven block counts otherwise, on the communicator's own MPI communicator. Its
// schedule is the library's business, so its bytes are neither counted nor predicted.
// In place (sendbuf == recvbuf + offset of block r) it passes MPI_IN_PLACE, whose
// layout (the rank's contribution already at its place in recvbuf) is collscope's.
#include <vector>

#include "collscope/allgather.hpp"
#include "collscope/mpi_types.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope {
namespace {

void allgatherv(Comm& comm, const void* send, const CollArgs& a) {
  const int n = comm.size();
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(counts.size());
  for (int i = 0; i < n; ++i) {
    const patterns::Block b = patterns::block_of(a.count, n, i);
    counts[static_cast<std::size_t>(i)] = static_cast<int>(b.count);
    displs[static_cast<std::size_t>(i)] = static_cast<int>(b.offset);
  }
  const MPI_Datatype t = mpi_datatype(a.dtype);
  comm.step("MPI_Allgatherv", 0);
  check_mpi(MPI_Allgatherv(send, counts[static_cast<std::size_t>(comm.rank())], t, a.recvbuf,
                       counts.data(), displs.data(), t, comm.mpi_comm()),
        "MPI_Allgatherv");
}

}  // namespace

std::optional<std::string> allgather_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void allgather_mpi(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const patterns::Block own = patterns::block_of(a.count, n, comm.rank());
  const bool in_place = a.sendbuf == patterns::at(a.recvbuf, own, a.elem_size());
  const void* send = in_place ? MPI_IN_PLACE : a.sendbuf;
  if (a.count % static_cast<std::size_t>(n) != 0) return allgatherv(comm, send, a);
  const int each = static_cast<int>(own.count);
  const MPI_Datatype t = mpi_datatype(a.dtype);
  comm.step("MPI_Allgather", 0);
  check_mpi(MPI_Allgather(send, each, t, a.recvbuf, each, t, comm.mpi_comm()), "MPI_Allgather");
}

}  // namespace collscope
