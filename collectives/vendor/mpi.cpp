// The vendor baselines: the MPI library's own collectives, called the way collscope's
// buffer layouts (collective.hpp) ask. Uneven blocks use the v-variants (MPI_Gatherv,
// ...) with Open MPI's block rule; in-place calls pass MPI_IN_PLACE where MPI has it.
// avg is reduced as sum and divided afterwards by the caller (run_collective).
#include <climits>
#include <string>
#include <vector>

#include "collscope/comm.hpp"
#include "collscope/progress.hpp"
#include "collscope/mpi_types.hpp"
#include "collscope/vendor_mpi.hpp"

namespace collscope::vendor {
namespace {

using patterns::Block;
using patterns::block_of;

constexpr std::uint64_t kIntMax = static_cast<std::uint64_t>(INT_MAX);

int as_int(std::size_t v) { return static_cast<int>(v); }

// Block counts and offsets of the uneven rule, as MPI's int arrays.
struct BlockArrays {
  std::vector<int> counts, displs;
};

BlockArrays block_arrays(std::size_t count, int n) {
  BlockArrays b{std::vector<int>(static_cast<std::size_t>(n)), std::vector<int>(static_cast<std::size_t>(n))};
  for (int i = 0; i < n; ++i) {
    const Block blk = block_of(count, n, i);
    b.counts[static_cast<std::size_t>(i)] = as_int(blk.count);
    b.displs[static_cast<std::size_t>(i)] = as_int(blk.offset);
  }
  return b;
}

bool even_blocks(std::size_t count, int n) { return count % static_cast<std::size_t>(n) == 0; }

const std::byte* at(const void* base, std::size_t elements, std::size_t elem) {
  return static_cast<const std::byte*>(base) + elements * elem;
}

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

void reduce_scatter_call(Comm& comm, const void* send, void* recv, const CollArgs& a) {
  const int n = comm.size();
  const MPI_Datatype t = mpi_datatype(a.dtype);
  const MPI_Op op = mpi_op(a.op, a.dtype);
  if (even_blocks(a.count, n)) {
    report_step("MPI_Reduce_scatter_block", 0);
    check_mpi(MPI_Reduce_scatter_block(send, recv, as_int(a.count / static_cast<std::size_t>(n)),
                                       t, op, comm.mpi_comm()),
              "MPI_Reduce_scatter_block");
    return;
  }
  report_step("MPI_Reduce_scatter", 0);
  std::vector<int> counts = block_arrays(a.count, n).counts;
  check_mpi(MPI_Reduce_scatter(send, recv, counts.data(), t, op, comm.mpi_comm()),
            "MPI_Reduce_scatter");
}

}  // namespace

std::optional<std::string> mpi_int_count(int, const CollArgs& a) {
  if (a.count <= static_cast<std::size_t>(INT_MAX)) return std::nullopt;
  return "the vendor MPI collective takes an int count: " + std::to_string(a.count) +
         " elements is above " + std::to_string(INT_MAX);
}

std::optional<std::string> mpi_alltoallv_limits(int nranks, const CollArgs& a) {
  if (auto bad = split_matrix_problem(nranks, a)) return bad;
  if (auto bad = int_overflow(nranks, a, true)) return bad;
  return int_overflow(nranks, a, false);
}

void mpi_allreduce(Comm& comm, const CollArgs& a) {
  report_step("MPI_Allreduce", 0);
  const void* send = a.in_place() ? MPI_IN_PLACE : a.sendbuf;
  check_mpi(MPI_Allreduce(send, a.recvbuf, as_int(a.count), mpi_datatype(a.dtype),
                          mpi_op(a.op, a.dtype), comm.mpi_comm()),
            "MPI_Allreduce");
}

// In place (recvbuf == sendbuf + offset of block r) MPI_IN_PLACE takes the vector from
// the start of the receive buffer and leaves block r there: the call gets the send
// buffer as its receive buffer, and the result is then copied to block r's place (one
// block, not overlapping: off(r) >= block(0)).
void mpi_reduce_scatter(Comm& comm, const CollArgs& a) {
  const std::size_t elem = a.elem_size();
  const Block own = block_of(a.count, comm.size(), comm.rank());
  if (a.recvbuf != at(a.sendbuf, own.offset, elem))
    return reduce_scatter_call(comm, a.sendbuf, a.recvbuf, a);
  void* whole = const_cast<void*>(a.sendbuf);  // in place: it is the receive buffer's memory
  reduce_scatter_call(comm, MPI_IN_PLACE, whole, a);
  comm.executor().copy(a.recvbuf, whole, own.count * elem);
}

// In place (sendbuf == recvbuf + offset of block r): MPI_IN_PLACE, whose layout (the
// rank's contribution already at its place in recvbuf) is collscope's.
void mpi_allgather(Comm& comm, const CollArgs& a) {
  const int n = comm.size();
  const Block own = block_of(a.count, n, comm.rank());
  const bool in_place = a.sendbuf == at(a.recvbuf, own.offset, a.elem_size());
  const void* send = in_place ? MPI_IN_PLACE : a.sendbuf;
  const MPI_Datatype t = mpi_datatype(a.dtype);
  if (even_blocks(a.count, n)) {
    report_step("MPI_Allgather", 0);
    check_mpi(MPI_Allgather(send, as_int(own.count), t, a.recvbuf, as_int(own.count), t,
                            comm.mpi_comm()),
              "MPI_Allgather");
    return;
  }
  report_step("MPI_Allgatherv", 0);
  BlockArrays b = block_arrays(a.count, n);
  check_mpi(MPI_Allgatherv(send, as_int(own.count), t, a.recvbuf, b.counts.data(),
                           b.displs.data(), t, comm.mpi_comm()),
            "MPI_Allgatherv");
}

// From the root's receive buffer (the root first copies its send buffer there when out
// of place).
void mpi_broadcast(Comm& comm, const CollArgs& a) {
  report_step("MPI_Bcast", 0);
  if (comm.rank() == a.root && !a.in_place()) comm.executor().copy(a.recvbuf, a.sendbuf, a.bytes());
  check_mpi(MPI_Bcast(a.recvbuf, as_int(a.count), mpi_datatype(a.dtype), a.root, comm.mpi_comm()),
            "MPI_Bcast");
}

// MPI_IN_PLACE at the root when in place (never elsewhere: only the root has a receive
// buffer).
void mpi_reduce(Comm& comm, const CollArgs& a) {
  report_step("MPI_Reduce", 0);
  const bool root = comm.rank() == a.root;
  const void* send = root && a.in_place() ? MPI_IN_PLACE : a.sendbuf;
  check_mpi(MPI_Reduce(send, root ? a.recvbuf : nullptr, as_int(a.count), mpi_datatype(a.dtype),
                       mpi_op(a.op, a.dtype), a.root, comm.mpi_comm()),
            "MPI_Reduce");
}

void mpi_gather(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Datatype t = mpi_datatype(a.dtype);
  const bool in_place_root =
      r == a.root && a.sendbuf == at(a.recvbuf, block_of(a.count, n, a.root).offset, a.elem_size());
  const void* send = in_place_root ? MPI_IN_PLACE : a.sendbuf;
  const int mine = as_int(block_of(a.count, n, r).count);
  if (even_blocks(a.count, n)) {
    report_step("MPI_Gather", 0);
    check_mpi(MPI_Gather(send, mine, t, a.recvbuf, mine, t, a.root, comm.mpi_comm()), "MPI_Gather");
    return;
  }
  report_step("MPI_Gatherv", 0);
  BlockArrays b = block_arrays(a.count, n);
  check_mpi(MPI_Gatherv(send, mine, t, a.recvbuf, b.counts.data(), b.displs.data(), t, a.root,
                        comm.mpi_comm()),
            "MPI_Gatherv");
}

void mpi_scatter(Comm& comm, const CollArgs& a) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Datatype t = mpi_datatype(a.dtype);
  const bool in_place_root =
      r == a.root && a.recvbuf == at(a.sendbuf, block_of(a.count, n, a.root).offset, a.elem_size());
  void* recv = in_place_root ? MPI_IN_PLACE : a.recvbuf;
  const int mine = as_int(block_of(a.count, n, r).count);
  if (even_blocks(a.count, n)) {
    report_step("MPI_Scatter", 0);
    check_mpi(MPI_Scatter(a.sendbuf, mine, t, recv, mine, t, a.root, comm.mpi_comm()), "MPI_Scatter");
    return;
  }
  report_step("MPI_Scatterv", 0);
  BlockArrays b = block_arrays(a.count, n);
  check_mpi(MPI_Scatterv(a.sendbuf, b.counts.data(), b.displs.data(), t, recv, mine, t, a.root,
                         comm.mpi_comm()),
            "MPI_Scatterv");
}

void mpi_alltoall(Comm& comm, const CollArgs& a) {
  report_step("MPI_Alltoall", 0);
  const void* send = a.in_place() ? MPI_IN_PLACE : a.sendbuf;
  const MPI_Datatype t = mpi_datatype(a.dtype);
  check_mpi(MPI_Alltoall(send, as_int(a.count), t, a.recvbuf, as_int(a.count), t, comm.mpi_comm()),
            "MPI_Alltoall");
}

void mpi_alltoallv(Comm& comm, const CollArgs& a) {
  report_step("MPI_Alltoallv", 0);
  const int n = comm.size(), r = comm.rank();
  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<int> send_counts(un), recv_counts(un), send_displs(un), recv_displs(un);
  for (int p = 0; p < n; ++p) {
    const std::size_t i = static_cast<std::size_t>(p);
    send_counts[i] = static_cast<int>(split_at(a, r, p, n));
    recv_counts[i] = static_cast<int>(split_at(a, p, r, n));
    send_displs[i] = static_cast<int>(split_send_offset(a, r, p, n));
    recv_displs[i] = static_cast<int>(split_recv_offset(a, p, r, n));
  }
  const MPI_Datatype t = mpi_datatype(a.dtype);
  check_mpi(MPI_Alltoallv(a.sendbuf, send_counts.data(), send_displs.data(), t, a.recvbuf,
                          recv_counts.data(), recv_displs.data(), t, comm.mpi_comm()),
            "MPI_Alltoallv");
}

void mpi_barrier(Comm& comm, const CollArgs&) {
  report_step("MPI_Barrier", 0);
  check_mpi(MPI_Barrier(comm.mpi_comm()), "MPI_Barrier");
}

}  // namespace collscope::vendor
