// The vendor baseline: MPI_Gather when the blocks are even (count % N == 0), MPI_Gatherv
// with the uneven block rule otherwise; MPI_IN_PLACE at the root when in place. Its bytes
// are neither counted nor predicted.
#include <vector>

#include "collscope/gather.hpp"
#include "collscope/mpi_types.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope {
namespace {

bool in_place_root(const Comm& comm, const CollArgs& a) {
  if (comm.rank() != a.root) return false;
  const patterns::Block own = patterns::block_of(a.count, comm.size(), a.root);
  return a.sendbuf == patterns::at(a.recvbuf, own, a.elem_size());
}

}  // namespace

std::optional<std::string> gather_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void gather_mpi(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Datatype t = mpi_datatype(a.dtype);
  const void* send = in_place_root(comm, a) ? MPI_IN_PLACE : a.sendbuf;
  const int mine = static_cast<int>(patterns::block_of(a.count, n, r).count);
  if (a.count % static_cast<std::size_t>(n) == 0) {
    comm.step("MPI_Gather", 0);
    check_mpi(MPI_Gather(send, mine, t, a.recvbuf, mine, t, a.root, comm.mpi_comm()), "MPI_Gather");
    return;
  }
  comm.step("MPI_Gatherv", 0);
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const patterns::Block b = patterns::block_of(a.count, n, p);
    counts[static_cast<std::size_t>(p)] = static_cast<int>(b.count);
    displs[static_cast<std::size_t>(p)] = static_cast<int>(b.offset);
  }
  check_mpi(MPI_Gatherv(send, mine, t, a.recvbuf, counts.data(), displs.data(), t, a.root,
                    comm.mpi_comm()),
        "MPI_Gatherv");
}

}  // namespace collscope
