// CollArgs: what one collective call is asked to do. Pure data (no MPI, no buffers
// owned): schedules, theory, executors and the harness all read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "collscope/types.hpp"

namespace collscope {

inline constexpr std::size_t kDefaultSegmentBytes = std::size_t{1} << 20;
inline constexpr std::size_t kDefaultScratchLimit = std::size_t{8} << 30;

struct CollArgs {
  const void* sendbuf = nullptr;  // equal to recvbuf for an in-place call
  void* recvbuf = nullptr;
  std::size_t count = 0;          // elements (allreduce: the length of the vector)
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  MemoryKind mem = MemoryKind::host;
  std::size_t segment_bytes = kDefaultSegmentBytes;  // chunk of pipelined algorithms
  std::size_t scratch_limit = kDefaultScratchLimit;  // per rank, checked before a run
  // all-to-all-v only: the N x N split matrix in elements, row = sender (collective.hpp).
  std::span<const std::uint64_t> splits;

  // sendbuf == recvbuf. Collectives whose in-place buffer sits inside the other one
  // (allgather, reduce_scatter, gather, scatter) compare the addresses themselves.
  bool in_place() const { return sendbuf == recvbuf; }
  std::size_t elem_size() const { return dtype_size(dtype); }
  std::size_t bytes() const { return count * elem_size(); }
};

}  // namespace collscope
