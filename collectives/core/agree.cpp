#include "collscope/agree.hpp"

#include <climits>

#include "collscope/errors.hpp"

namespace collscope {

void agree_or_throw(MPI_Comm comm, const std::string& problem) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int first = problem.empty() ? INT_MAX : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  std::string text = problem;
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, first, comm);
  throw UsageError(first == 0 ? text : "rank " + std::to_string(first) + ": " + text);
}

}  // namespace collscope
