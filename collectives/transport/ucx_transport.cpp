#include "collscope/ucx_transport.hpp"

#include <sched.h>
#include <ucp/api/ucp.h>

#include <cstdlib>
#include <string>

#include "collscope/errors.hpp"
#include "collscope/progress.hpp"

extern char** environ;

namespace collscope {

struct UcxTransport::Handles {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;
};

namespace {

constexpr std::uint64_t kFullMask = ~std::uint64_t{0};

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

// Every rank learns whether any rank failed, so all of them throw together (no hang).
void agree(MPI_Comm comm, ucs_status_t local, const char* what) {
  int bad = local == UCS_OK ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
  if (any == 0) return;
  throw RuntimeErrorOnAllRanks(std::string("ucx transport: ") + what + " failed" +
                               (bad ? ": " + status_text(local) : " on another rank") +
                               " (see UCX_TLS / UCX_NET_DEVICES in the README)");
}

// The worker addresses of all ranks, exchanged over MPI.
std::vector<std::vector<char>> exchange_addresses(MPI_Comm comm, const ucp_address_t* addr,
                                                  std::size_t len) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  const int my_len = static_cast<int>(len);
  std::vector<int> lens(n), displs(n);
  MPI_Allgather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < n; ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::vector<char> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(addr, my_len, MPI_BYTE, all.data(), lens.data(), displs.data(), MPI_BYTE, comm);
  std::vector<std::vector<char>> out(n);
  for (int r = 0; r < n; ++r) out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + lens[r]);
  return out;
}

// Spins on progress; under oversubscription, yields the CPU once a wait runs long.
void progress_until_done(ucp_worker_h worker, void* req) {
  for (unsigned spins = 0; ucp_request_check_status(req) == UCS_INPROGRESS; ++spins)
    if (ucp_worker_progress(worker) == 0 && spins > 1000) sched_yield();
}

}  // namespace

namespace {

std::string& memory_types_seen() {
  static std::string types;
  return types;
}

// UCX's names of its memory types, written here rather than read from UCX's own
// ucs_memory_type_names: that array grows between releases (1.13 has 5 entries, 1.22 more),
// and a binary built on one and run on the other would read a copy of the wrong size.
// The values are UCX's (ucs/memory/memory_type.h), stable since 1.9; later ones by number.
std::string memory_type_name(int t) {
  switch (t) {
    case UCS_MEMORY_TYPE_HOST: return "host";
    case UCS_MEMORY_TYPE_CUDA: return "cuda";
    case UCS_MEMORY_TYPE_CUDA_MANAGED: return "cuda-managed";
    case UCS_MEMORY_TYPE_ROCM: return "rocm";
    case UCS_MEMORY_TYPE_ROCM_MANAGED: return "rocm-managed";
    default: return "type" + std::to_string(t);
  }
}

std::string memory_type_names(std::uint64_t bits) {
  std::string out;
  for (int t = UCS_MEMORY_TYPE_HOST; t < UCS_MEMORY_TYPE_LAST; ++t)
    if (bits & UCS_BIT(t)) out += (out.empty() ? "" : ",") + memory_type_name(t);
  return out;
}

}  // namespace

std::string ucx_context_memory_types() { return memory_types_seen(); }

std::vector<std::string> ucx_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e)
    if (std::string(*e).rfind("UCX_", 0) == 0) out.emplace_back(*e);
  return out;
}

UcxTransport::UcxTransport(MPI_Comm comm) : h_(new Handles) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG;
  params.estimated_num_eps = static_cast<std::size_t>(size_);
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st == UCS_OK) {
    st = ucp_init(&params, config, &h_->context);
    ucp_config_release(config);
  }
  agree(comm_, st, "ucp_init");
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  device_refusal_ = "this UCX has no CUDA memory support (built without it, or UCX_TLS excludes cuda)";
  if (ucp_context_query(h_->context, &attr) == UCS_OK) {
    memory_types_seen() = memory_type_names(attr.memory_types);
    if (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) device_refusal_.clear();
  }

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  agree(comm_, ucp_worker_create(h_->context, &wp, &h_->worker), "ucp_worker_create");

  ucp_address_t* addr = nullptr;
  std::size_t len = 0;
  agree(comm_, ucp_worker_get_address(h_->worker, &addr, &len), "ucp_worker_get_address");
  const auto addresses = exchange_addresses(comm_, addr, len);
  ucp_worker_release_address(h_->worker, addr);

  h_->eps.assign(static_cast<std::size_t>(size_), nullptr);
  ucs_status_t ep_status = UCS_OK;
  for (int p = 0; p < size_ && ep_status == UCS_OK; ++p) {
    if (p == rank_) continue;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses[p].data());
    ep_status = ucp_ep_create(h_->worker, &ep, &h_->eps[p]);
  }
  agree(comm_, ep_status, "ucp_ep_create");
  wire_up();
}

// One empty message each way on every endpoint, so the endpoints finish connecting
// now rather than inside the first timed call. Tag sequence 0 is never a call's.
// Connecting needs both sides' progress (over tcp the peer must accept and answer), so
// no rank leaves before every rank is done.
void UcxTransport::wire_up() {
  std::vector<Request> reqs;
  char dummy = 0;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    reqs.push_back(irecv(p, &dummy, 0, MemoryKind::host, Tag{0, 0}));
    reqs.push_back(isend(p, &dummy, 0, MemoryKind::host, Tag{0, 0}));
  }
  wait_all(reqs);
  ucp_request_param_t param{};
  std::vector<void*> flushing;
  void* req = ucp_worker_flush_nbx(h_->worker, &param);
  if (UCS_PTR_IS_ERR(req))
    throw RuntimeError("ucx transport: worker flush failed: " + status_text(UCS_PTR_STATUS(req)));
  if (UCS_PTR_IS_PTR(req)) flushing.push_back(req);
  progress_until_all_ranks_done(flushing);
}

// Progresses the worker until this rank's `reqs` are complete (and frees them), then
// until every rank has got that far: a rank that stops progressing UCX early could
// leave a peer waiting on it forever.
void UcxTransport::progress_until_all_ranks_done(std::vector<void*>& reqs) {
  MPI_Request all_done = MPI_REQUEST_NULL;
  for (int done = 0; !done;) {
    if (ucp_worker_progress(h_->worker) == 0) sched_yield();  // oversubscribed cores
    std::erase_if(reqs, [](void* req) {
      if (ucp_request_check_status(req) == UCS_INPROGRESS) return false;
      ucp_request_free(req);
      return true;
    });
    if (!reqs.empty()) continue;
    if (all_done == MPI_REQUEST_NULL) MPI_Ibarrier(comm_, &all_done);
    MPI_Test(&all_done, &done, MPI_STATUS_IGNORE);
  }
}

void UcxTransport::quiesce() {
  ucp_request_param_t param{};
  void* req = ucp_worker_flush_nbx(h_->worker, &param);
  if (UCS_PTR_IS_ERR(req))
    throw RuntimeError("ucx transport: worker flush failed: " + status_text(UCS_PTR_STATUS(req)));
  if (!UCS_PTR_IS_PTR(req)) return;
  progress_until_done(h_->worker, req);
  ucp_request_free(req);
}

// Closing an endpoint with a flush needs the peer's worker to answer (over tcp it does),
// so every rank keeps progressing until all have closed.
void UcxTransport::close_endpoints() {
  std::vector<void*> closing;
  for (ucp_ep_h& ep : h_->eps) {
    if (!ep) continue;
    ucp_request_param_t param{};  // no flags: flush what is outstanding, then close
    void* req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
    ep = nullptr;
  }
  progress_until_all_ranks_done(closing);
}

UcxTransport::~UcxTransport() {
  if (h_->worker) {
    close_endpoints();
    ucp_worker_destroy(h_->worker);
  }
  if (h_->context) ucp_cleanup(h_->context);
  delete h_;
  MPI_Comm_free(&comm_);
}

std::uint64_t UcxTransport::ucx_tag(int source, Tag tag) const {
  return (static_cast<std::uint64_t>(source) << 40) |
         (static_cast<std::uint64_t>(tag.seq & 0xFFFFFF) << 16) | (tag.local & 0xFFFF);
}

void UcxTransport::check_args(int peer, MemoryKind mem) const {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw RuntimeError("ucx transport: bad peer " + std::to_string(peer) + " on rank " +
                       std::to_string(rank_));
  if (mem != MemoryKind::host && !device_refusal_.empty())
    throw UsageError("ucx transport: device buffers: " + device_refusal_);
}

int UcxTransport::new_slot() {
  if (free_.empty()) {
    slots_.emplace_back();
    return static_cast<int>(slots_.size() - 1);
  }
  const int idx = free_.back();
  free_.pop_back();
  slots_[static_cast<std::size_t>(idx)] = Slot{};
  return idx;
}

namespace {
// Said, not detected: UCX skips its pointer lookup when told the memory type.
ucs_memory_type_t ucx_memory_type(MemoryKind mem) {
  return mem == MemoryKind::device ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}
}  // namespace

Request UcxTransport::isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                            Tag tag) {
  check_args(peer, mem);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.memory_type = ucx_memory_type(mem);
  void* req = ucp_tag_send_nbx(h_->eps[peer], buf, bytes, ucx_tag(rank_, tag), &param);
  if (UCS_PTR_IS_ERR(req))
    throw RuntimeError("ucx transport: send to rank " + std::to_string(peer) + " failed: " +
                       status_text(UCS_PTR_STATUS(req)));
  const int idx = new_slot();
  Slot& s = slots_[static_cast<std::size_t>(idx)];
  s.ucx_req = UCS_PTR_IS_PTR(req) ? req : nullptr;
  s.peer = peer;
  s.bytes = s.received = bytes;
  if (s.ucx_req) ++ucx_requests_live_;
  return Request{idx};
}

Request UcxTransport::irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag) {
  check_args(peer, mem);
  // Always a request, never an immediate completion: UCX 1.13 can complete a receive at
  // once without filling the recv_info it was given (seen with tcp: length 0 for a
  // 4-byte message), so the received length is read from the request when it is done.
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.memory_type = ucx_memory_type(mem);
  void* req = ucp_tag_recv_nbx(h_->worker, buf, bytes, ucx_tag(peer, tag), kFullMask, &param);
  if (UCS_PTR_IS_ERR(req) || req == nullptr)
    throw RuntimeError("ucx transport: receive from rank " + std::to_string(peer) +
                       " failed: " + status_text(UCS_PTR_STATUS(req)));
  const int idx = new_slot();
  Slot& s = slots_[static_cast<std::size_t>(idx)];
  s.ucx_req = req;
  s.peer = peer;
  s.is_recv = true;
  s.bytes = bytes;
  ++ucx_requests_live_;
  return Request{idx};
}

void UcxTransport::wait(Request& req) {
  if (!req.pending()) return;
  Slot& s = slots_[static_cast<std::size_t>(req.slot)];
  if (s.ucx_req) {
    Progress& p = progress();
    p.wait_is_recv.store(s.is_recv, std::memory_order_relaxed);
    p.wait_peer.store(s.peer, std::memory_order_relaxed);
    progress_until_done(h_->worker, s.ucx_req);
    p.wait_peer.store(-1, std::memory_order_relaxed);
  }
  finish(req);
}

bool UcxTransport::test(Request& req) {
  if (!req.pending()) return true;
  Slot& s = slots_[static_cast<std::size_t>(req.slot)];
  if (s.ucx_req) {
    ucp_worker_progress(h_->worker);
    if (ucp_request_check_status(s.ucx_req) == UCS_INPROGRESS) return false;
  }
  finish(req);
  return true;
}

// A completed request: its status and received length checked, the UCX request
// released, the slot free again.
void UcxTransport::finish(Request& req) {
  Slot& s = slots_[static_cast<std::size_t>(req.slot)];
  if (s.ucx_req) {
    ucs_status_t st = ucp_request_check_status(s.ucx_req);
    if (s.is_recv && st == UCS_OK) {
      ucp_tag_recv_info_t info{};
      st = ucp_tag_recv_request_test(s.ucx_req, &info);
      s.received = info.length;
    }
    ucp_request_free(s.ucx_req);
    --ucx_requests_live_;
    s.ucx_req = nullptr;
    if (st != UCS_OK)
      throw RuntimeError("ucx transport: rank " + std::to_string(rank_) +
                         (s.is_recv ? " receive from" : " send to") + " rank " +
                         std::to_string(s.peer) + " failed: " + status_text(st));
  }
  if (s.is_recv && s.received != s.bytes)
    throw RuntimeError("ucx transport: rank " + std::to_string(rank_) + " expected " +
                       std::to_string(s.bytes) + " B from rank " + std::to_string(s.peer) +
                       ", got " + std::to_string(s.received));
  free_.push_back(req.slot);
  req.slot = -1;
}

int UcxTransport::open_requests() const { return static_cast<int>(slots_.size() - free_.size()); }

}  // namespace collscope
