#include "collscope/mpi_transport.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <climits>
#include <string>

#include "collscope/errors.hpp"
#include "collscope/progress.hpp"

namespace collscope {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RuntimeError(std::string("mpi transport: ") + what + ": " + std::string(msg, len));
}

// MPI counts are int: a message over INT_MAX bytes travels as a struct type made of
// whole GiB pieces plus the remainder.
struct ByteType {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
};

ByteType byte_type(std::size_t bytes) {
  if (bytes <= static_cast<std::size_t>(INT_MAX)) return {MPI_BYTE, static_cast<int>(bytes)};
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  MPI_Datatype gib;
  MPI_Type_contiguous(static_cast<int>(kGiB), MPI_BYTE, &gib);
  const int lens[2] = {static_cast<int>(bytes / kGiB), static_cast<int>(bytes % kGiB)};
  const MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(bytes / kGiB * kGiB)};
  const MPI_Datatype types[2] = {gib, MPI_BYTE};
  ByteType bt{MPI_DATATYPE_NULL, 1};
  MPI_Type_create_struct(2, lens, disps, types, &bt.type);
  MPI_Type_commit(&bt.type);
  MPI_Type_free(&gib);
  return bt;
}

}  // namespace

std::string mpi_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1 ? "yes" : "no";
#else
  return "unknown";
#endif
}

std::string mpi_device_memory_refusal() {
  const std::string aware = mpi_cuda_aware();
  if (aware == "yes") return "";
  if (aware == "no") return "this MPI library is not CUDA-aware (MPIX_Query_cuda_support() = 0)";
  return "this MPI library has no CUDA extension (no MPIX_Query_cuda_support)";
}

MpiTransport::MpiTransport(MPI_Comm comm) : device_refusal_(mpi_device_memory_refusal()) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // The MPI tag is seq * 256 + local tag: take as many sequence bits as MPI_TAG_UB allows.
  void* attr = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &attr, &found);
  const long tag_ub = found ? *static_cast<int*>(attr) : 32767;
  const long local_span = Tag::kMaxLocalTag + 1;
  while (static_cast<long>(seq_modulus_) * 2 * local_span - 1 <= tag_ub) seq_modulus_ *= 2;
}

MpiTransport::~MpiTransport() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int MpiTransport::mpi_tag(Tag tag) const {
  return static_cast<int>((tag.seq % seq_modulus_) * (Tag::kMaxLocalTag + 1) +
                          (tag.local & Tag::kMaxLocalTag));
}

void MpiTransport::check_peer(int peer, std::size_t, MemoryKind mem) const {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw RuntimeError("mpi transport: bad peer " + std::to_string(peer) + " on rank " +
                       std::to_string(rank_));
  if (mem != MemoryKind::host && !device_refusal_.empty())
    throw UsageError("mpi transport: device buffers: " + device_refusal_);
}

Request MpiTransport::post(Slot slot) {
  int idx;
  if (free_.empty()) {
    idx = static_cast<int>(slots_.size());
    slots_.push_back(slot);
  } else {
    idx = free_.back();
    free_.pop_back();
    slots_[idx] = slot;
  }
  return Request{idx};
}

// A send or a receive posted: the message as bytes (a large one as a contiguous type,
// byte_type), its request kept in a slot.
Request MpiTransport::start(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag,
                            bool is_recv) {
  check_peer(peer, bytes, mem);
  ByteType bt = byte_type(bytes);
  Slot s{MPI_REQUEST_NULL, peer, is_recv, bytes};
  if (is_recv)
    check_mpi(MPI_Irecv(buf, bt.count, bt.type, peer, mpi_tag(tag), comm_, &s.req), "MPI_Irecv");
  else
    check_mpi(MPI_Isend(buf, bt.count, bt.type, peer, mpi_tag(tag), comm_, &s.req), "MPI_Isend");
  if (bt.type != MPI_BYTE) MPI_Type_free(&bt.type);
  return post(s);
}

Request MpiTransport::isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                           Tag tag) {
  // MPI_Isend reads buf only; start takes one pointer type for both directions.
  return start(peer, const_cast<void*>(buf), bytes, mem, tag, false);
}

Request MpiTransport::irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag) {
  return start(peer, buf, bytes, mem, tag, true);
}

void MpiTransport::wait(Request& req) {
  if (!req.pending()) return;
  Slot& s = slots_[static_cast<std::size_t>(req.slot)];
  Progress& p = progress();
  p.wait_is_recv.store(s.is_recv, std::memory_order_relaxed);
  p.wait_peer.store(s.peer, std::memory_order_relaxed);
  MPI_Status status;
  check_mpi(MPI_Wait(&s.req, &status), s.is_recv ? "MPI_Wait(recv)" : "MPI_Wait(send)");
  p.wait_peer.store(-1, std::memory_order_relaxed);
  finish(req, status);
}

bool MpiTransport::test(Request& req) {
  if (!req.pending()) return true;
  Slot& s = slots_[static_cast<std::size_t>(req.slot)];
  int done = 0;
  MPI_Status status;
  check_mpi(MPI_Test(&s.req, &done, &status), s.is_recv ? "MPI_Test(recv)" : "MPI_Test(send)");
  if (!done) return false;
  finish(req, status);
  return true;
}

// A completed request: its received length checked, its slot free again.
void MpiTransport::finish(Request& req, const MPI_Status& status) {
  const Slot& s = slots_[static_cast<std::size_t>(req.slot)];
  if (s.is_recv && s.bytes <= static_cast<std::size_t>(INT_MAX)) {
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (static_cast<std::size_t>(got) != s.bytes)
      throw RuntimeError("mpi transport: rank " + std::to_string(rank_) + " expected " +
                         std::to_string(s.bytes) + " B from rank " + std::to_string(s.peer) +
                         ", got " + std::to_string(got));
  }
  free_.push_back(req.slot);
  req.slot = -1;
}

int MpiTransport::open_requests() const {
  return static_cast<int>(slots_.size() - free_.size());
}

}  // namespace collscope
