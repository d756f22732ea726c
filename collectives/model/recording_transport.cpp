#include "collscope/recording_transport.hpp"

#include <climits>

#include "collscope/errors.hpp"

namespace collscope {

RecordingTransport::RecordingTransport(Transport& inner) : inner_(inner), reducer_(*this) {}

Request RecordingTransport::isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                                  Tag tag) {
  Request r = inner_.isend(peer, buf, bytes, mem, tag);
  if (recording_) {
    const std::uint32_t id = trace_.send(peer, bytes, tag.local, tag.seq);
    if (r.pending()) pending_[r.slot] = id;
  }
  return r;
}

Request RecordingTransport::irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem,
                                  Tag tag) {
  Request r = inner_.irecv(peer, buf, bytes, mem, tag);
  if (recording_) {
    const std::uint32_t id = trace_.recv(peer, bytes, tag.local, tag.seq);
    if (r.pending()) pending_[r.slot] = id;
  }
  return r;
}

// Recorded before the inner wait, which resets the request (and may reuse its slot).
void RecordingTransport::record_wait(const Request& req) {
  if (!recording_ || !req.pending()) return;
  const auto it = pending_.find(req.slot);
  if (it == pending_.end()) return;  // posted before start()
  trace_.wait(it->second);
  pending_.erase(it);
}

void RecordingTransport::wait(Request& req) {
  record_wait(req);
  inner_.wait(req);
}

// A wait for all is a wait for each: the simulator's clock ends at the latest of them.
void RecordingTransport::wait_all(std::span<Request> reqs) {
  for (const Request& r : reqs) record_wait(r);
  inner_.wait_all(reqs);
}

void RecordingTransport::attach_reducer(Comm& comm) {
  comm.set_reducer_wrapper([this](const Reducer& chosen) -> const Reducer& {
    return reducer_over(chosen);
  });
}

const Reducer& RecordingTransport::reducer_over(const Reducer& chosen) {
  reducer_.set_inner(chosen);
  return reducer_;
}

void RecordingTransport::start() {
  reset();
  recording_ = true;
}

void RecordingTransport::stop() { recording_ = false; }

void RecordingTransport::reset() {
  trace_.events.clear();
  pending_.clear();
}

// ---- the recording reducer -----------------------------------------------------------

void RecordingTransport::RecordingReducer::reduce(void* out, const void* a, const void* b,
                                                  std::size_t count, DataType t,
                                                  ReduceOp op) const {
  if (owner_.recording_) owner_.trace_.reduce(count * dtype_size(t));
  inner_->reduce(out, a, b, count, t, op);
}

// avg's final division reads and writes every element once, like a reduction.
void RecordingTransport::RecordingReducer::divide(void* buf, std::size_t count, DataType t,
                                                  int divisor) const {
  if (owner_.recording_) owner_.trace_.reduce(count * dtype_size(t));
  inner_->divide(buf, count, t, divisor);
}

void RecordingTransport::RecordingReducer::copy(void* dst, const void* src,
                                                std::size_t bytes) const {
  if (owner_.recording_) owner_.trace_.copy(bytes);
  inner_->copy(dst, src, bytes);
}

// ---- gathering -----------------------------------------------------------------------

// Every rank learns every size first, so all of them refuse an oversized trace alike.
std::vector<RankTrace> gather_traces(const RecordingTransport& recording, MPI_Comm ctrl,
                                     int root) {
  const std::vector<std::uint8_t> mine = recording.serialize();
  int rank = 0, n = 0;
  MPI_Comm_rank(ctrl, &rank);
  MPI_Comm_size(ctrl, &n);
  const auto my_size = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> sizes64(static_cast<std::size_t>(n));
  MPI_Allgather(&my_size, 1, MPI_INT64_T, sizes64.data(), 1, MPI_INT64_T, ctrl);
  std::vector<int> sizes, offsets;
  std::int64_t total = 0;
  for (std::int64_t size : sizes64) {
    offsets.push_back(static_cast<int>(total));
    sizes.push_back(static_cast<int>(size));
    total += size;
    if (total > INT_MAX) throw RuntimeErrorOnAllRanks("the traces of all ranks are over 2 GiB");
  }
  std::vector<std::uint8_t> all(rank == root ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(mine.data(), static_cast<int>(my_size), MPI_UINT8_T, all.data(), sizes.data(),
              offsets.data(), MPI_UINT8_T, root, ctrl);
  if (rank != root) return {};
  return parse_traces(all, sizes);
}

}  // namespace collscope
