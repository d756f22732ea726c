// NCCL's own collectives as baselines (vendor_nccl.hpp), on the NCCL executor's
// communicator and stream, with collscope's buffer layouts (collective.hpp).
#include <string>

#include "collscope/comm.hpp"
#include "collscope/progress.hpp"
#include "collscope/errors.hpp"
#include "collscope/vendor_nccl.hpp"
#include "nccl_executor_impl.hpp"

namespace collscope::vendor {
namespace {

using patterns::Block;
using patterns::block_of;

constexpr const char* kGrouped = "grouped ncclSend/ncclRecv";

NcclExecutor& executor_of(Comm& comm) {
  NcclExecutor* e = as_nccl(comm.executor());
  if (!e) throw UsageError("the NCCL baselines run with -t nccl");
  return *e;
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::int8: return ncclInt8;
    case DataType::uint8: return ncclUint8;
    case DataType::int32: return ncclInt32;
    case DataType::int64: return ncclInt64;
    case DataType::float16: return ncclFloat16;
    case DataType::bfloat16: return ncclBfloat16;
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
  }
  return ncclInt8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return ncclSum;  // avg: divided by the caller
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

bool even_blocks(std::size_t count, int n) { return count % static_cast<std::size_t>(n) == 0; }

const std::byte* at(const void* base, std::size_t elements, std::size_t elem) {
  return static_cast<const std::byte*>(base) + elements * elem;
}
std::byte* at(void* base, std::size_t elements, std::size_t elem) {
  return static_cast<std::byte*>(base) + elements * elem;
}

// The library NCCL baselines would use on this machine (for implementation()): its
// collectives newer than it are grouped calls instead.
const nccl::Library* found_library() {
  return nccl::unavailable_reason().empty() ? &nccl::library() : nullptr;
}

// Runs `body` between ncclGroupStart and ncclGroupEnd.
template <class F>
void grouped(NcclExecutor& e, F body) {
  e.check(e.lib().GroupStart(), "ncclGroupStart");
  body();
  e.check(e.lib().GroupEnd(), "ncclGroupEnd");
}

}  // namespace

void nccl_allreduce(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  report_step("ncclAllReduce", 0);
  e.check(e.lib().AllReduce(a.sendbuf, a.recvbuf, a.count, nccl_type(a.dtype), nccl_op(a.op),
                            e.comm(), e.stream()),
          "ncclAllReduce");
}

std::string nccl_reduce_scatter_impl(int nranks, const CollArgs& a) {
  return even_blocks(a.count, nranks) ? "ncclReduceScatter" : "grouped ncclReduce per block";
}

// Uneven blocks: one ncclReduce per block, to its owner (in place where the owner's
// block already sits in the send buffer).
void nccl_reduce_scatter(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  if (even_blocks(a.count, n)) {
    report_step("ncclReduceScatter", 0);
    e.check(e.lib().ReduceScatter(a.sendbuf, a.recvbuf, a.count / static_cast<std::size_t>(n),
                                  nccl_type(a.dtype), nccl_op(a.op), e.comm(), e.stream()),
            "ncclReduceScatter");
    return;
  }
  report_step("ncclReduce per block", 0);
  grouped(e, [&] {
    for (int i = 0; i < n; ++i) {
      const Block b = block_of(a.count, n, i);
      const void* send = at(a.sendbuf, b.offset, elem);
      void* recv = i == comm.rank() ? a.recvbuf : const_cast<void*>(send);
      e.check(e.lib().Reduce(send, recv, b.count, nccl_type(a.dtype), nccl_op(a.op), i, e.comm(),
                             e.stream()),
              "ncclReduce");
    }
  });
}

std::string nccl_allgather_impl(int nranks, const CollArgs& a) {
  return even_blocks(a.count, nranks) ? "ncclAllGather" : "grouped ncclBroadcast per block";
}

// Uneven blocks: one ncclBroadcast per block from its owner.
void nccl_allgather(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  const int n = comm.size();
  const std::size_t elem = a.elem_size();
  if (even_blocks(a.count, n)) {
    report_step("ncclAllGather", 0);
    e.check(e.lib().AllGather(a.sendbuf, a.recvbuf, a.count / static_cast<std::size_t>(n),
                              nccl_type(a.dtype), e.comm(), e.stream()),
            "ncclAllGather");
    return;
  }
  report_step("ncclBroadcast per block", 0);
  grouped(e, [&] {
    for (int i = 0; i < n; ++i) {
      const Block b = block_of(a.count, n, i);
      void* place = at(a.recvbuf, b.offset, elem);
      const void* send = i == comm.rank() ? a.sendbuf : place;
      e.check(e.lib().Broadcast(send, place, b.count, nccl_type(a.dtype), i, e.comm(), e.stream()),
              "ncclBroadcast");
    }
  });
}

void nccl_broadcast(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  report_step("ncclBroadcast", 0);
  const void* send = comm.rank() == a.root ? a.sendbuf : a.recvbuf;
  e.check(e.lib().Broadcast(send, a.recvbuf, a.count, nccl_type(a.dtype), a.root, e.comm(),
                            e.stream()),
          "ncclBroadcast");
}

void nccl_reduce(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  report_step("ncclReduce", 0);
  e.check(e.lib().Reduce(a.sendbuf, a.recvbuf, a.count, nccl_type(a.dtype), nccl_op(a.op), a.root,
                         e.comm(), e.stream()),
          "ncclReduce");
}

std::string nccl_gather_impl(int nranks, const CollArgs& a) {
  const nccl::Library* lib = found_library();
  return lib && lib->Gather && even_blocks(a.count, nranks) ? "ncclGather" : kGrouped;
}

void nccl_gather(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = a.elem_size();
  if (e.lib().Gather && even_blocks(a.count, n)) {
    report_step("ncclGather", 0);
    e.check(e.lib().Gather(a.sendbuf, a.recvbuf, a.count / static_cast<std::size_t>(n),
                           nccl_type(a.dtype), a.root, e.comm(), e.stream()),
            "ncclGather");
    return;
  }
  report_step(kGrouped, 0);
  const Block own = block_of(a.count, n, r);
  if (r == a.root) {  // its own block first (nothing to do in place)
    void* place = at(a.recvbuf, own.offset, elem);
    if (place != a.sendbuf) e.copy(place, a.sendbuf, own.count * elem);
  }
  grouped(e, [&] {
    if (r != a.root) {
      e.check(e.lib().Send(a.sendbuf, own.count * elem, ncclInt8, a.root, e.comm(), e.stream()),
              "ncclSend");
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (i == r) continue;
      const Block b = block_of(a.count, n, i);
      e.check(e.lib().Recv(at(a.recvbuf, b.offset, elem), b.count * elem, ncclInt8, i, e.comm(),
                           e.stream()),
              "ncclRecv");
    }
  });
}

std::string nccl_scatter_impl(int nranks, const CollArgs& a) {
  const nccl::Library* lib = found_library();
  return lib && lib->Scatter && even_blocks(a.count, nranks) ? "ncclScatter" : kGrouped;
}

void nccl_scatter(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = a.elem_size();
  if (e.lib().Scatter && even_blocks(a.count, n)) {
    report_step("ncclScatter", 0);
    e.check(e.lib().Scatter(a.sendbuf, a.recvbuf, a.count / static_cast<std::size_t>(n),
                            nccl_type(a.dtype), a.root, e.comm(), e.stream()),
            "ncclScatter");
    return;
  }
  report_step(kGrouped, 0);
  const Block own = block_of(a.count, n, r);
  if (r == a.root) {
    const void* mine = at(a.sendbuf, own.offset, elem);
    if (mine != a.recvbuf) e.copy(a.recvbuf, mine, own.count * elem);
  }
  grouped(e, [&] {
    if (r != a.root) {
      e.check(e.lib().Recv(a.recvbuf, own.count * elem, ncclInt8, a.root, e.comm(), e.stream()),
              "ncclRecv");
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (i == r) continue;
      const Block b = block_of(a.count, n, i);
      e.check(e.lib().Send(at(a.sendbuf, b.offset, elem), b.count * elem, ncclInt8, i, e.comm(),
                           e.stream()),
              "ncclSend");
    }
  });
}

std::string nccl_alltoall_impl(int, const CollArgs&) {
  const nccl::Library* lib = found_library();
  return lib && lib->AlltoAll ? "ncclAlltoAll" : kGrouped;
}

// Block j of the send buffer goes to rank j; its own block is a copy.
void nccl_alltoall(Comm& comm, const CollArgs& a) {
  NcclExecutor& e = executor_of(comm);
  const int n = comm.size(), r = comm.rank();
  const std::size_t bytes = a.bytes();  // one block
  if (e.lib().AlltoAll) {
    report_step("ncclAlltoAll", 0);
    e.check(e.lib().AlltoAll(a.sendbuf, a.recvbuf, a.count, nccl_type(a.dtype), e.comm(), e.stream()),
            "ncclAlltoAll");
    return;
  }
  report_step(kGrouped, 0);
  const auto block = [bytes](const void* base, int j) {
    return static_cast<const std::byte*>(base) + static_cast<std::size_t>(j) * bytes;
  };
  e.copy(const_cast<std::byte*>(block(a.recvbuf, r)), block(a.sendbuf, r), bytes);
  grouped(e, [&] {
    for (int j = 0; j < n; ++j) {
      if (j == r) continue;
      e.check(e.lib().Send(block(a.sendbuf, j), bytes, ncclInt8, j, e.comm(), e.stream()), "ncclSend");
      e.check(e.lib().Recv(const_cast<std::byte*>(block(a.recvbuf, j)), bytes, ncclInt8, j, e.comm(),
                           e.stream()),
              "ncclRecv");
    }
  });
}

}  // namespace collscope::vendor
