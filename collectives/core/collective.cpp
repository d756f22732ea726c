#include "collscope/collective.hpp"

namespace collscope {
namespace {

using patterns::block_of;

std::size_t full(const CollArgs& a, int, int) { return a.count; }
std::size_t none(const CollArgs&, int, int) { return 0; }
std::size_t own_block(const CollArgs& a, int rank, int n) { return block_of(a.count, n, rank).count; }
std::size_t full_at_root(const CollArgs& a, int rank, int) { return rank == a.root ? a.count : 0; }
std::size_t per_peer(const CollArgs& a, int, int n) { return a.count * static_cast<std::size_t>(n); }
std::size_t split_row(const CollArgs& a, int rank, int n) { return split_row_sum(a, rank, n); }
std::size_t split_col(const CollArgs& a, int rank, int n) { return split_col_sum(a, rank, n); }

std::size_t whole_bytes(std::size_t bytes, std::size_t elem, int) { return bytes / elem; }
std::size_t per_peer_of_bytes(std::size_t bytes, std::size_t elem, int n) {
  return bytes / (elem * static_cast<std::size_t>(n));
}
std::size_t no_count(std::size_t, std::size_t, int) { return 0; }

std::size_t count_bytes(const CollArgs& a, int) { return a.bytes(); }
std::size_t per_peer_bytes(const CollArgs& a, int n) { return a.bytes() * static_cast<std::size_t>(n); }
// all-to-all-v: the mean bytes a rank sends (the matrix total over N).
std::size_t mean_row_bytes(const CollArgs& a, int n) {
  std::uint64_t total = 0;
  for (std::uint64_t s : a.splits) total += s;
  return static_cast<std::size_t>(total / static_cast<std::uint64_t>(n)) * a.elem_size();
}
std::size_t zero_bytes(const CollArgs&, int) { return 0; }

// name, reduces, rooted, has_data, in_place, root_only, send, recv, count_for, reported
const CollectiveInfo kCollectives[] = {
    {"allreduce", true, false, true, InPlace::same, false, full, full, whole_bytes, count_bytes},
    {"reduce_scatter", true, false, true, InPlace::recv_in_send, false, full, own_block,
     whole_bytes, count_bytes},
    {"allgather", false, false, true, InPlace::send_in_recv, false, own_block, full, whole_bytes,
     count_bytes},
    {"broadcast", false, true, true, InPlace::same, false, full_at_root, full, whole_bytes,
     count_bytes},
    {"reduce", true, true, true, InPlace::same, false, full, full_at_root, whole_bytes,
     count_bytes},
    {"gather", false, true, true, InPlace::send_in_recv, true, own_block, full_at_root,
     whole_bytes, count_bytes},
    {"scatter", false, true, true, InPlace::recv_in_send, true, full_at_root, own_block,
     whole_bytes, count_bytes},
    {"alltoall", false, false, true, InPlace::same, false, per_peer, per_peer, per_peer_of_bytes,
     per_peer_bytes},
    {"alltoallv", false, false, true, InPlace::none, false, split_row, split_col, whole_bytes,
     mean_row_bytes},
    {"barrier", false, false, false, InPlace::none, false, none, none, no_count, zero_bytes},
};

}  // namespace

std::span<const CollectiveInfo> all_collectives() { return kCollectives; }

const CollectiveInfo* find_collective(std::string_view name) {
  for (const CollectiveInfo& c : kCollectives)
    if (c.name == name) return &c;
  return nullptr;
}

std::size_t in_place_offset(const CollectiveInfo& c, const CollArgs& a, int rank, int nranks) {
  const int owner = c.in_place_root_only ? a.root : rank;
  switch (c.in_place) {
    case InPlace::send_in_recv:
    case InPlace::recv_in_send: return block_of(a.count, nranks, owner).offset;
    default: return 0;
  }
}

std::uint64_t split_row_sum(const CollArgs& a, int rank, int n) {
  std::uint64_t s = 0;
  for (int j = 0; j < n; ++j) s += split_at(a, rank, j, n);
  return s;
}

std::uint64_t split_col_sum(const CollArgs& a, int rank, int n) {
  std::uint64_t s = 0;
  for (int i = 0; i < n; ++i) s += split_at(a, i, rank, n);
  return s;
}

std::uint64_t split_send_offset(const CollArgs& a, int from, int to, int n) {
  std::uint64_t s = 0;
  for (int j = 0; j < to; ++j) s += split_at(a, from, j, n);
  return s;
}

std::uint64_t split_recv_offset(const CollArgs& a, int from, int to, int n) {
  std::uint64_t s = 0;
  for (int i = 0; i < from; ++i) s += split_at(a, i, to, n);
  return s;
}

}  // namespace collscope
