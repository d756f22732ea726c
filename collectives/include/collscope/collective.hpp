// What each collective means: the size of every rank's send and receive buffers for a
// call of `count` elements, where in-place buffers sit, and the size column the
// harness reports (nccl-tests conventions). Algorithms, theory, verification and the
// harness all read this one table, so they cannot disagree about a buffer.
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
#include <span>
#include <string_view>

#include "collscope/comm.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope {

enum class InPlace {
  none,          // the collective has no in-place form here
  same,          // sendbuf == recvbuf
  send_in_recv,  // sendbuf == recvbuf + offset of block(in_place_rank)
  recv_in_send,  // recvbuf == sendbuf + offset of block(in_place_rank)
};

struct CollectiveInfo {
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
};

std::span<const CollectiveInfo> all_collectives();
const CollectiveInfo* find_collective(std::string_view name);

// Where the in-place buffer lives, in elements from the start of the larger buffer.
std::size_t in_place_offset(const CollectiveInfo&, const CollArgs&, int rank, int nranks);

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

}  // namespace collscope
