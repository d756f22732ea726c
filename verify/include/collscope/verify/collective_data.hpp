// Inputs and exact expected results of every collective (layouts in collscope/
// collective.hpp), and the buffers of one call, in or out of place, in host or device
// memory (CollArgs::mem). The harness and the MPI tests share them, so both check the
// same thing.
#pragma once

#include <cstddef>
#include <memory>

#include "collscope/collective.hpp"
#include "collscope/verify/data.hpp"

namespace collscope::verify {

// The data spec a collective's call uses: movement data where nothing is reduced.
DataSpec data_spec_for(const CollectiveInfo&, std::uint64_t seed, DataType, ReduceOp, int nranks);

// Writes `rank`'s input into a.sendbuf (send_count elements).
void fill_collective_input(const CollectiveInfo&, const CollArgs& a, const DataSpec&, int rank);
// Writes what `rank`'s receive buffer must hold afterwards (recv_count elements).
void fill_collective_expected(const CollectiveInfo&, void* want, const CollArgs& a,
                              const DataSpec&, int rank);
// Compares a.recvbuf with what it must hold (filled in a.mem, beside it).
Mismatch check_collective_result(const CollectiveInfo&, const CollArgs& a, const DataSpec&,
                                 int rank);

// Memory of a.mem's kind (host: 64-byte aligned; device: cudaMalloc'd, or the host
// emulation's), freed by the owner.
struct Free {
  MemoryKind mem = MemoryKind::host;
  void operator()(std::byte* p) const;
};
using Buffer = std::unique_ptr<std::byte[], Free>;
Buffer alloc(MemoryKind mem, std::size_t bytes);
// Synchronous copies between host memory and device memory (the device runtime's; for
// setting up and checking payloads outside the timed calls).
void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes);

// The buffers of one call, in a.mem: allocates what the layout needs and points
// args.sendbuf / args.recvbuf at it, in place or not.
class CallBuffers {
 public:
  // Throws UsageError when in place is asked of a collective without an in-place form.
  CallBuffers(const CollectiveInfo&, CollArgs& args, bool in_place, int rank, int nranks);
  std::size_t send_count() const { return send_count_; }
  std::size_t recv_count() const { return recv_count_; }

 private:
  Buffer send_, recv_;
  std::size_t send_count_ = 0, recv_count_ = 0;
};

}  // namespace collscope::verify
