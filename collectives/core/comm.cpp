#include "collscope/comm.hpp"

#include "collscope/errors.hpp"

namespace collscope {

Progress& progress() {
  static Progress p;
  return p;
}

Comm::Comm(Transport& transport, MPI_Comm mpi_comm)
    : transport_(transport), mpi_comm_(mpi_comm), reducer_(&host_reducer()) {}

void Comm::begin_call(const char* collective, const char* algorithm, MemoryKind mem) {
  mem_ = mem;
  reducer_ = &reducer_for(mem);
  if (wrap_reducer_) reducer_ = &wrap_reducer_(*reducer_);
  ++seq_;
  Progress& p = progress();
  p.collective.store(collective, std::memory_order_relaxed);
  p.algorithm.store(algorithm, std::memory_order_relaxed);
  step("start", 0);
}

void Comm::end_call() {
  step("quiesce", 0);
  transport_.quiesce();
  step("done", 0);
}

Request Comm::isend(int peer, const void* buf, std::size_t bytes, std::uint32_t local_tag) {
  if (bytes == 0) return {};
  return transport_.isend(peer, buf, bytes, mem_, Tag{seq_, local_tag});
}

Request Comm::irecv(int peer, void* buf, std::size_t bytes, std::uint32_t local_tag) {
  if (bytes == 0) return {};
  return transport_.irecv(peer, buf, bytes, mem_, Tag{seq_, local_tag});
}

Request Comm::signal(int peer, std::uint32_t local_tag) {
  return transport_.isend(peer, nullptr, 0, mem_, Tag{seq_, local_tag});
}

Request Comm::expect_signal(int peer, std::uint32_t local_tag) {
  return transport_.irecv(peer, nullptr, 0, mem_, Tag{seq_, local_tag});
}

void* Comm::scratch(int slot, std::size_t bytes) {
  if (mem_ != MemoryKind::host)
    throw UsageError("device scratch memory needs the CUDA back-end");
  if (scratch_.size() <= static_cast<std::size_t>(slot)) scratch_.resize(slot + 1);
  std::vector<std::byte>& buf = scratch_[slot];
  if (buf.size() < bytes) buf.resize(bytes);
  return buf.data();
}

}  // namespace collscope
