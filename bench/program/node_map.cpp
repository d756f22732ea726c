#include "collscope/program/node_map.hpp"

namespace collscope::program {

std::vector<int> node_of_rank(MPI_Comm comm) {
  int rank = 0, n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(n)), node(leaders.size());
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  int next = 0;
  for (std::size_t r = 0; r < node.size(); ++r)
    node[r] = leaders[r] == static_cast<int>(r) ? next++ : node[static_cast<std::size_t>(leaders[r])];
  return node;
}

}  // namespace collscope::program
