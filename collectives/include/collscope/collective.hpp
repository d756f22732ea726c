// What each collective means, in one row per collective (the way nccl-tests keeps one
// small table per test): the size of every rank's send and receive buffers for a call
// of `count` elements, where in-place buffers sit, the size column the harness reports,
// nccl-tests' bus-bandwidth factor, how input is filled and what result is expected
// (each collective's vendor calls are the registry's: runtime/registry.cpp). Algorithms, theory, verification and the harness all read this one
// table, so they cannot disagree about a buffer.
//
// `count` is the length of the full vector, split into N blocks by the uneven rule
// (patterns::block_of: the first count % N blocks get one extra element):
//
//   collective      send buffer            receive buffer          in place
//   allreduce       count                  count                   send == recv
//   reduce_scatter  count                  block(rank)             recv == send + off(rank)
//   allgather       block(rank)            count                   send == recv + off(rank)
//   broadcast       count (root)           count                   send == recv (root)
//   reduce          count                  count (root)            send == recv (root)
//   gather          block(rank)            count (root)            send == recv + off(root), root
//   scatter         count (root)           block(rank)             recv == send + off(root), root
//   alltoall        N x count              N x count               send == recv
//   alltoallv       row sum of splits      column sum of splits    none
//   barrier         0                      0                       none
//
// all-to-all's count is per peer (MPI's sendcount): block j of the send buffer goes to
// rank j, and block i of the receive buffer comes from rank i. all-to-all-v takes an
// N x N split matrix (elements, row = sender): rank i's send buffer holds its row
// packed in destination order, rank j's receive buffer its column in source order.
// A buffer marked (root) is empty (zero elements) on every other rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "collscope/coll_args.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/schedule.hpp"

namespace collscope {

class Comm;

enum class Collective : std::uint8_t {
  allreduce, reduce_scatter, allgather, broadcast, reduce, gather, scatter, alltoall,
  alltoallv, barrier,
};

enum class InPlace {
  none,          // the collective has no in-place form here
  same,          // sendbuf == recvbuf
  send_in_recv,  // sendbuf == recvbuf + offset of block(in_place_rank)
  recv_in_send,  // recvbuf == sendbuf + offset of block(in_place_rank)
};

// What a rank's send buffer holds (verify/ fills it).
enum class InputFill {
  none,       // barrier
  vector,     // its own whole vector (send_count elements of it)
  own_block,  // its block of the vector, taken at the block's offset
};

// What a rank's receive buffer must hold afterwards (verify/ computes it).
enum class Expected {
  none,               // barrier
  reduced,            // every rank's vector reduced (allreduce; reduce at the root)
  reduced_own_block,  // the reduced vector's block(rank) (reduce_scatter)
  every_block,        // block i of rank i's vector, for every i (allgather; gather at the root)
  root_vector,        // the root's vector (broadcast)
  root_block,         // block(rank) of the root's vector (scatter)
  alltoall_blocks,    // block i: what rank i addressed to this rank
  alltoallv_parts,    // the column of the split matrix, by source
};

// nccl-tests' bus bandwidth factors (busbw = algbw x factor).
enum class BusFactor {
  two_passes,  // 2(N-1)/N: allreduce
  one_pass,    // (N-1)/N: reduce_scatter, allgather, gather, scatter, all-to-all(-v)
  one,         // 1: broadcast, reduce, barrier
};

// A library's own implementation of a collective (MPI's on Comm::mpi_comm(), NCCL's on
// the NCCL executor's communicator).
struct VendorCall {
  std::string_view function;  // "MPI_Allreduce", for help and docs
  void (*run)(Comm&, const CollArgs&) = nullptr;
  // Why this call cannot be made (int counts, ...), or nullopt.
  std::optional<std::string> (*constraint)(int nranks, const CollArgs&) = nullptr;
  // What this call really runs, when that depends on the call or the library found at
  // run time ("ncclAlltoAll", or "grouped ncclSend/ncclRecv" before NCCL 2.28); null:
  // `function`.
  std::string (*implementation)(int nranks, const CollArgs&) = nullptr;
  bool in_place = true;  // has an in-place form
  bool device_only = false;  // runs on GPU memory only (NCCL's collectives)
  bool available() const { return run != nullptr; }
};

struct CollectiveInfo {
  Collective id;
  std::string_view name;
  bool reduces = false;     // takes -o
  bool rooted = false;      // takes -r
  bool has_data = true;     // false: barrier (no buffers, no size sweep)
  InPlace in_place = InPlace::same;
  bool in_place_root_only = false;  // gather, scatter: only the root runs in place
  // Elements in `rank`'s send and receive buffers for this call.
  std::size_t (*send_count)(const CollArgs&, int rank, int nranks) = nullptr;
  std::size_t (*recv_count)(const CollArgs&, int rank, int nranks) = nullptr;
  // The size column: the call's count for a -b/-e size, and the bytes reported for it.
  std::size_t (*count_for_bytes)(std::size_t bytes, std::size_t elem, int nranks) = nullptr;
  std::size_t (*reported_bytes)(const CollArgs&, int nranks) = nullptr;
  BusFactor bus_factor = BusFactor::one;
  InputFill input = InputFill::vector;
  Expected expected = Expected::none;
};

std::span<const CollectiveInfo> all_collectives();
const CollectiveInfo& collective_info(Collective c);
// By name, for the command line; nullptr if there is none.
const CollectiveInfo* find_collective(std::string_view name);
std::string_view collective_name(Collective c);

double busbw_factor(const CollectiveInfo& c, int nranks);

// Where the in-place buffer lives, in elements from the start of the larger buffer.
std::size_t in_place_offset(const CollectiveInfo&, const CollArgs&, int rank, int nranks);
// How the send and receive buffers of this rank's call overlap when `in_place`.
Aliasing aliasing_of(const CollectiveInfo&, const CollArgs&, bool in_place, int rank, int nranks);
// Whether this rank's buffers (a.sendbuf, a.recvbuf) are laid out in place.
bool is_in_place(const CollectiveInfo&, const CollArgs&, int rank, int nranks);

// all-to-all-v: the split matrix, its row and column sums, and element offsets.
inline std::uint64_t split_at(const CollArgs& a, int from, int to, int n) {
  return a.splits[static_cast<std::size_t>(from) * static_cast<std::size_t>(n) +
                  static_cast<std::size_t>(to)];
}
std::uint64_t split_row_sum(const CollArgs&, int rank, int nranks);
std::uint64_t split_col_sum(const CollArgs&, int rank, int nranks);
// Offset of the part for `to` in rank `from`'s send buffer (elements).
std::uint64_t split_send_offset(const CollArgs&, int from, int to, int nranks);
// Offset of the part from `from` in rank `to`'s receive buffer (elements).
std::uint64_t split_recv_offset(const CollArgs&, int from, int to, int nranks);
// nullopt when a.splits is an N x N matrix, else why not.
std::optional<std::string> split_matrix_problem(int nranks, const CollArgs& a);

}  // namespace collscope
