// The vendor baseline: MPI_Alltoallv on the communicator's own MPI communicator. Its
// schedule is the library's business, so its bytes are neither counted nor predicted.
// Limits: MPI's int counts and displacements: every part and every offset of every
// rank's send and receive buffers must fit in an int (checked on the whole matrix, so
// every rank reaches the same verdict).
#include <climits>
#include <vector>

#include "collscope/alltoallv.hpp"
#include "collscope/mpi_types.hpp"
#include "splits.hpp"

namespace collscope {
namespace {

constexpr std::uint64_t kIntMax = static_cast<std::uint64_t>(INT_MAX);

// The first part (from -> to) whose count or packed offset does not fit in an int, for
// rows (send buffers, by_row) or columns (receive buffers).
std::optional<std::string> int_overflow(int n, const CollArgs& a, bool by_row) {
  for (int line = 0; line < n; ++line) {
    std::uint64_t offset = 0;
    for (int pos = 0; pos < n; ++pos) {
      const int from = by_row ? line : pos, to = by_row ? pos : line;
      const std::uint64_t part = split_at(a, from, to, n);
      if (part > kIntMax || offset > kIntMax)
        return "MPI_Alltoallv takes int counts and displacements: the part " +
               std::to_string(from) + " -> " + std::to_string(to) + " (" +
               std::to_string(part) + " elements at offset " + std::to_string(offset) +
               ") is above " + std::to_string(INT_MAX);
      offset += part;
    }
  }
  return std::nullopt;
}

std::vector<int> to_ints(const std::vector<std::size_t>& v, std::size_t unit) {
  std::vector<int> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int>(v[i] / unit);
  return out;
}

}  // namespace

std::optional<std::string> alltoallv_mpi_constraint(int nranks, const CollArgs& a) {
  if (auto bad = detail::split_matrix_check(nranks, a)) return bad;
  if (auto bad = int_overflow(nranks, a, true)) return bad;
  return int_overflow(nranks, a, false);
}

void alltoallv_mpi(Comm& comm, const CollArgs& a) {
  comm.step("MPI_Alltoallv", 0);
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = a.elem_size();
  std::vector<int> send_counts(static_cast<std::size_t>(n)), recv_counts(send_counts);
  for (int p = 0; p < n; ++p) {
    send_counts[static_cast<std::size_t>(p)] = static_cast<int>(split_at(a, r, p, n));
    recv_counts[static_cast<std::size_t>(p)] = static_cast<int>(split_at(a, p, r, n));
  }
  const std::vector<int> send_displs = to_ints(detail::send_part_offsets(a, r, n), elem);
  const std::vector<int> recv_displs = to_ints(detail::recv_part_offsets(a, r, n), elem);
  const MPI_Datatype type = mpi_datatype(a.dtype);
  const int rc = MPI_Alltoallv(a.sendbuf, send_counts.data(), send_displs.data(), type,
                               a.recvbuf, recv_counts.data(), recv_displs.data(), type,
                               comm.mpi_comm());
  check_mpi(rc, "MPI_Alltoallv");
}

}  // namespace collscope
