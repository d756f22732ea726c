#include "collscope/verify/collective_data.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "collscope/device/runtime.hpp"
#include "collscope/errors.hpp"

namespace collscope::verify {
namespace {

using patterns::Block;
using patterns::block_of;

std::byte* bytes_at(void* base, std::size_t elements, DataType t) {
  return static_cast<std::byte*>(base) + elements * dtype_size(t);
}

// Rank `owner`'s own block of the full vector, at its place in `buf`.
void fill_block(void* buf, const CollArgs& a, const DataSpec& s, int owner) {
  const Block b = block_of(a.count, s.nranks, owner);
  fill_input(a.mem, bytes_at(buf, b.offset, a.dtype), b.count, s, owner, b.offset);
}

void fill_every_block(void* buf, const CollArgs& a, const DataSpec& s) {
  for (int owner = 0; owner < s.nranks; ++owner) fill_block(buf, a, s, owner);
}

// all-to-all: block j of rank r's input is elements [j*count, (j+1)*count) of r's vector.
void fill_alltoall_expected(void* want, const CollArgs& a, const DataSpec& s, int rank) {
  const std::size_t r = static_cast<std::size_t>(rank);
  for (int from = 0; from < s.nranks; ++from)
    fill_input(a.mem, bytes_at(want, static_cast<std::size_t>(from) * a.count, a.dtype), a.count,
               s, from, r * a.count);
}

void fill_alltoallv_expected(void* want, const CollArgs& a, const DataSpec& s, int rank) {
  for (int from = 0; from < s.nranks; ++from)
    fill_input(a.mem, bytes_at(want, split_recv_offset(a, from, rank, s.nranks), a.dtype),
               split_at(a, from, rank, s.nranks), s, from,
               split_send_offset(a, from, rank, s.nranks));
}

}  // namespace

DataSpec data_spec_for(const CollectiveInfo& c, std::uint64_t seed, DataType t, ReduceOp op,
                       int nranks) {
  return {seed, t, c.reduces ? op : ReduceOp::sum, nranks, !c.reduces};
}

void fill_collective_input(const CollectiveInfo& c, const CollArgs& a, const DataSpec& s,
                           int rank) {
  void* send = const_cast<void*>(a.sendbuf);
  switch (c.input) {
    case InputFill::none: return;
    case InputFill::own_block: {  // the send buffer is the rank's block of its vector
      const Block b = block_of(a.count, s.nranks, rank);
      return fill_input(a.mem, send, b.count, s, rank, b.offset);
    }
    case InputFill::vector:
      return fill_input(a.mem, send, c.send_count(a, rank, s.nranks), s, rank);
  }
}

void fill_collective_expected(const CollectiveInfo& c, void* want, const CollArgs& a,
                              const DataSpec& s, int rank) {
  const std::size_t n = c.recv_count(a, rank, s.nranks);
  if (n == 0) return;
  switch (c.expected) {
    case Expected::none: return;
    case Expected::reduced: return fill_allreduce_expected(a.mem, want, n, s);
    case Expected::reduced_own_block:
      return fill_allreduce_expected(a.mem, want, n, s, block_of(a.count, s.nranks, rank).offset);
    case Expected::every_block: return fill_every_block(want, a, s);
    case Expected::root_vector: return fill_input(a.mem, want, n, s, a.root);
    case Expected::root_block:
      return fill_input(a.mem, want, n, s, a.root, block_of(a.count, s.nranks, rank).offset);
    case Expected::alltoall_blocks: return fill_alltoall_expected(want, a, s, rank);
    case Expected::alltoallv_parts: return fill_alltoallv_expected(want, a, s, rank);
  }
}

Mismatch check_collective_result(const CollectiveInfo& c, const CollArgs& a, const DataSpec& s,
                                 int rank) {
  const std::size_t n = c.recv_count(a, rank, s.nranks);
  Buffer want = alloc(a.mem, n * a.elem_size());
  fill_collective_expected(c, want.get(), a, s, rank);
  return compare(a.mem, a.recvbuf, want.get(), n, a.dtype);
}

void Free::operator()(std::byte* p) const {
  if (mem == MemoryKind::host) std::free(p);
  else device::runtime().free(p);
}

// Host buffers start on a page, as OSU's do (IMB's come from malloc: 16-byte aligned below
// 128 KiB, a page + 16 B above); docs/timing.md measures what the placement changes.
Buffer alloc(MemoryKind mem, std::size_t bytes) {
  if (mem == MemoryKind::device) {
    const std::size_t rounded = (bytes + 63) / 64 * 64 + 64;  // never zero
    return Buffer(static_cast<std::byte*>(device::runtime().alloc(rounded)), Free{mem});
  }
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (bytes / kPage + 1) * kPage;  // never zero
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kPage, rounded));
  if (!p) throw RuntimeError("out of host memory allocating " + std::to_string(bytes) + " B");
  return Buffer(p, Free{mem});
}

namespace {

void copy_synchronously(void* dst, const void* src, std::size_t bytes, device::CopyKind kind) {
  device::Runtime& rt = device::runtime();
  const device::Stream s = rt.create_stream();
  rt.copy(dst, src, bytes, kind, s);
  rt.synchronize(s);
  rt.destroy_stream(s);
}

}  // namespace

void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  copy_synchronously(device_dst, host_src, bytes, device::CopyKind::host_to_device);
}

void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  copy_synchronously(host_dst, device_src, bytes, device::CopyKind::device_to_host);
}

CallBuffers::CallBuffers(const CollectiveInfo& c, CollArgs& a, bool in_place, int rank,
                         int nranks)
    : send_count_(c.send_count(a, rank, nranks)), recv_count_(c.recv_count(a, rank, nranks)) {
  const std::size_t elem = a.elem_size();
  if (in_place && c.in_place == InPlace::none)
    throw UsageError(std::string(c.name) + " has no in-place form");
  const bool here = in_place && (!c.in_place_root_only || rank == a.root);
  const std::size_t off = in_place_offset(c, a, rank, nranks);
  if (here && c.in_place == InPlace::same) {
    recv_ = alloc(a.mem, std::max(send_count_, recv_count_) * elem);
    a.recvbuf = recv_.get();
    a.sendbuf = recv_.get();
  } else if (here && c.in_place == InPlace::send_in_recv) {
    recv_ = alloc(a.mem, recv_count_ * elem);
    a.recvbuf = recv_.get();
    a.sendbuf = recv_.get() + off * elem;
  } else if (here && c.in_place == InPlace::recv_in_send) {
    send_ = alloc(a.mem, send_count_ * elem);
    a.sendbuf = send_.get();
    a.recvbuf = send_.get() + off * elem;
  } else {
    send_ = alloc(a.mem, send_count_ * elem);
    recv_ = alloc(a.mem, recv_count_ * elem);
    a.sendbuf = send_.get();
    a.recvbuf = recv_.get();
  }
}

}  // namespace collscope::verify
