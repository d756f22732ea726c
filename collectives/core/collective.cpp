#include "collscope/collective.hpp"

#include <stdexcept>

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

using C = Collective;
using E = Expected;
using F = InputFill;
using B = BusFactor;

// One row per collective, in the order of the Collective enum.
const CollectiveInfo kCollectives[] = {
    // id name reduces rooted has_data in_place root_only send recv count_for reported
    //   bus input expected
    {C::allreduce, "allreduce", true, false, true, InPlace::same, false, full, full,
     whole_bytes, count_bytes, B::two_passes, F::vector, E::reduced},
    {C::reduce_scatter, "reduce_scatter", true, false, true, InPlace::recv_in_send, false, full,
     own_block, whole_bytes, count_bytes, B::one_pass, F::vector, E::reduced_own_block},
    {C::allgather, "allgather", false, false, true, InPlace::send_in_recv, false, own_block,
     full, whole_bytes, count_bytes, B::one_pass, F::own_block, E::every_block},
    {C::broadcast, "broadcast", false, true, true, InPlace::same, false, full_at_root, full,
     whole_bytes, count_bytes, B::one, F::vector, E::root_vector},
    {C::reduce, "reduce", true, true, true, InPlace::same, false, full, full_at_root,
     whole_bytes, count_bytes, B::one, F::vector, E::reduced},
    {C::gather, "gather", false, true, true, InPlace::send_in_recv, true, own_block,
     full_at_root, whole_bytes, count_bytes, B::one_pass, F::own_block, E::every_block},
    {C::scatter, "scatter", false, true, true, InPlace::recv_in_send, true, full_at_root,
     own_block, whole_bytes, count_bytes, B::one_pass, F::vector, E::root_block},
    {C::alltoall, "alltoall", false, false, true, InPlace::same, false, per_peer, per_peer,
     per_peer_of_bytes, per_peer_bytes, B::one_pass, F::vector, E::alltoall_blocks},
    {C::alltoallv, "alltoallv", false, false, true, InPlace::none, false, split_row, split_col,
     whole_bytes, mean_row_bytes, B::one_pass, F::vector, E::alltoallv_parts},
    {C::barrier, "barrier", false, false, false, InPlace::none, false, none, none, no_count,
     zero_bytes, B::one, F::none, E::none},
};

const std::byte* byte_at(const void* base, std::size_t elements, std::size_t elem) {
  return static_cast<const std::byte*>(base) + elements * elem;
}

}  // namespace

std::span<const CollectiveInfo> all_collectives() { return kCollectives; }

const CollectiveInfo& collective_info(Collective c) {
  const CollectiveInfo& info = kCollectives[static_cast<std::size_t>(c)];
  if (info.id != c) throw std::logic_error("the collective table is out of enum order");
  return info;
}

const CollectiveInfo* find_collective(std::string_view name) {
  for (const CollectiveInfo& c : kCollectives)
    if (c.name == name) return &c;
  return nullptr;
}

std::string_view collective_name(Collective c) { return collective_info(c).name; }

double busbw_factor(const CollectiveInfo& c, int nranks) {
  const double n = nranks;
  switch (c.bus_factor) {
    case BusFactor::two_passes: return 2.0 * (n - 1) / n;
    case BusFactor::one_pass: return (n - 1) / n;
    case BusFactor::one: return 1.0;
  }
  return 1.0;
}

std::size_t in_place_offset(const CollectiveInfo& c, const CollArgs& a, int rank, int nranks) {
  const int owner = c.in_place_root_only ? a.root : rank;
  switch (c.in_place) {
    case InPlace::send_in_recv:
    case InPlace::recv_in_send: return block_of(a.count, nranks, owner).offset;
    default: return 0;
  }
}

Aliasing aliasing_of(const CollectiveInfo& c, const CollArgs& a, bool in_place, int rank,
                     int nranks) {
  if (!in_place || (c.in_place_root_only && rank != a.root)) return {};
  const std::size_t off = in_place_offset(c, a, rank, nranks) * a.elem_size();
  switch (c.in_place) {
    case InPlace::none: return {};
    case InPlace::same: return {Aliasing::same, 0};
    case InPlace::send_in_recv: return {Aliasing::send_inside_recv, off};
    case InPlace::recv_in_send: return {Aliasing::recv_inside_send, off};
  }
  return {};
}

bool is_in_place(const CollectiveInfo& c, const CollArgs& a, int rank, int nranks) {
  if (c.in_place_root_only && rank != a.root) return false;
  const std::size_t off = in_place_offset(c, a, rank, nranks);
  switch (c.in_place) {
    case InPlace::none: return false;
    case InPlace::same: return a.sendbuf == a.recvbuf;
    case InPlace::send_in_recv: return a.sendbuf == byte_at(a.recvbuf, off, a.elem_size());
    case InPlace::recv_in_send: return a.recvbuf == byte_at(a.sendbuf, off, a.elem_size());
  }
  return false;
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

std::optional<std::string> split_matrix_problem(int nranks, const CollArgs& a) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  if (a.splits.size() == n * n) return std::nullopt;
  return "alltoallv needs an N x N split matrix: " + std::to_string(a.splits.size()) +
         " entries at " + std::to_string(nranks) + " ranks";
}

}  // namespace collscope
