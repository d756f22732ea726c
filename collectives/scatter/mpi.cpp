// The vendor baseline: MPI_Scatter when the blocks are even (count % N == 0),
// MPI_Scatterv with the uneven block rule otherwise; MPI_IN_PLACE as the root's receive
// buffer when in place. Its bytes are neither counted nor predicted.
#include <vector>

#include "collscope/mpi_types.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/scatter.hpp"

namespace collscope {
namespace {

bool in_place_root(const Comm& comm, const CollArgs& a) {
  if (comm.rank() != a.root) return false;
  const patterns::Block own = patterns::block_of(a.count, comm.size(), a.root);
  return a.recvbuf == patterns::at(a.sendbuf, own, a.elem_size());
}

}  // namespace

std::optional<std::string> scatter_mpi_constraint(int, const CollArgs& a) {
  return mpi_count_constraint(a.count);
}

void scatter_mpi(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Datatype t = mpi_datatype(a.dtype);
  void* recv = in_place_root(comm, a) ? MPI_IN_PLACE : a.recvbuf;
  const int mine = static_cast<int>(patterns::block_of(a.count, n, r).count);
  if (a.count % static_cast<std::size_t>(n) == 0) {
    comm.step("MPI_Scatter", 0);
    check_mpi(MPI_Scatter(a.sendbuf, mine, t, recv, mine, t, a.root, comm.mpi_comm()), "MPI_Scatter");
    return;
  }
  comm.step("MPI_Scatterv", 0);
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const patterns::Block b = patterns::block_of(a.count, n, p);
    counts[static_cast<std::size_t>(p)] = static_cast<int>(b.count);
    displs[static_cast<std::size_t>(p)] = static_cast<int>(b.offset);
  }
  check_mpi(MPI_Scatterv(a.sendbuf, counts.data(), displs.data(), t, recv, mine, t, a.root,
                     comm.mpi_comm()),
        "MPI_Scatterv");
}

}  // namespace collscope
