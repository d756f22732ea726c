#include <cstdlib>
#include <cstring>

#include "collscope/agree.hpp"
#include "collscope/errors.hpp"
#include "collscope/executor_sink.hpp"
#include "collscope/progress.hpp"
#include "nccl_executor_impl.hpp"

extern char** environ;

namespace collscope {
namespace {

constexpr int kMultiRankGpuVersion = 23000;  // NCCL 2.30.0

// The watchdog's view of the executor: its asynchronous error, and abort.
class Guard final : public AbortHook {
 public:
  explicit Guard(NcclExecutor& e) : e_(e) { set_abort_hook(this); }
  ~Guard() override { set_abort_hook(nullptr); }
  std::string async_error() override { return e_.async_error(); }
  void abort() override { e_.abort(); }

 private:
  NcclExecutor& e_;
};

std::string my_gpu_uuid(device::Runtime& rt) { return rt.info().uuid; }

// Every rank's GPU UUID, on every rank.
std::vector<std::string> all_gpu_uuids(const std::string& mine, MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  char buf[64] = {};
  std::strncpy(buf, mine.c_str(), sizeof buf - 1);
  std::vector<char> all(static_cast<std::size_t>(n) * sizeof buf);
  MPI_Allgather(buf, sizeof buf, MPI_CHAR, all.data(), sizeof buf, MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.emplace_back(all.data() + static_cast<std::size_t>(r) * sizeof buf);
  return out;
}

bool multi_rank_gpu_enabled() {
  const char* v = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return v && std::string(v) == "1";
}

ncclDataType_t bytes_type() { return ncclInt8; }

}  // namespace

std::string shared_gpu_refusal(const std::vector<std::string>& gpu_of_rank,
                               const std::vector<int>& node_of_rank, int nccl_version,
                               bool multi_rank_enabled) {
  for (std::size_t a = 0; a < gpu_of_rank.size(); ++a)
    for (std::size_t b = a + 1; b < gpu_of_rank.size(); ++b) {
      if (node_of_rank[a] != node_of_rank[b] || gpu_of_rank[a] != gpu_of_rank[b]) continue;
      if (nccl_version >= kMultiRankGpuVersion && multi_rank_enabled) return "";
      const std::string why =
          nccl_version >= kMultiRankGpuVersion
              ? "set NCCL_MULTI_RANK_GPU_ENABLE=1 to let NCCL run them"
              : "NCCL before 2.30 refuses several ranks on one GPU (\"Duplicate GPU detected\"); "
                "2.30 and later allow it with NCCL_MULTI_RANK_GPU_ENABLE=1";
      return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share GPU " +
             gpu_of_rank[a] + ": " + why + " (use one GPU per rank, --device-map, or -t mpi)";
    }
  return "";
}

std::string nccl_runtime_version() {
  return nccl::unavailable_reason().empty() ? nccl::library().version_text() : "";
}

std::vector<std::string> nccl_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e)
    if (std::string(*e).rfind("NCCL_", 0) == 0) out.emplace_back(*e);
  return out;
}

std::unique_ptr<Executor> make_nccl_executor(device::Runtime& rt, MPI_Comm comm,
                                             const std::vector<int>& node_of_rank) {
  if (rt.emulated())
    throw UsageError("-t nccl needs a real GPU: the emulated device has no NCCL");
  agree_or_throw(comm, nccl::unavailable_reason());
  const nccl::Library& lib = nccl::library();
  int rank = 0, n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  const auto uuids = all_gpu_uuids(my_gpu_uuid(rt), comm);
  const std::string shared = shared_gpu_refusal(uuids, node_of_rank, lib.version, multi_rank_gpu_enabled());
  if (!shared.empty()) throw UsageError(shared);  // the same on every rank
  ncclUniqueId id;
  std::string problem;
  if (rank == 0) {
    const ncclResult_t rc = lib.GetUniqueId(&id);
    if (rc != ncclSuccess) problem = std::string("ncclGetUniqueId: ") + lib.GetErrorString(rc);
  }
  agree_or_throw(comm, problem);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclComm_t c = nullptr;
  const ncclResult_t rc = lib.CommInitRank(&c, n, id, rank);
  agree_or_throw(comm, rc == ncclSuccess ? "" : std::string("ncclCommInitRank: ") + lib.GetErrorString(rc));
  return std::make_unique<NcclExecutor>(rt, lib, c, rank, n);
}

NcclExecutor::NcclExecutor(device::Runtime& rt, const nccl::Library& lib, ncclComm_t comm, int rank,
                           int size)
    : Executor(size), rt_(rt), lib_(lib), comm_(comm), rank_(rank), size_(size),
      stream_(rt.create_stream()), empty_(rt, 16), scratch_(rt, stream_) {
  guard_ = std::make_unique<Guard>(*this);
}

NcclExecutor::~NcclExecutor() {
  guard_.reset();
  try {
    rt_.synchronize(stream_);
  } catch (...) {
  }
  lib_.CommDestroy(comm_);
  scratch_.clear();
  empty_.reset();
  rt_.destroy_stream(stream_);
}

// Each step whole, through the sink (executor_sink.hpp): its messages are one group,
// its local ops kernels after them on the stream.
void NcclExecutor::run(Plan& plan, Steps& steps, CallBuffers buffers, std::uint32_t seq,
                       const CallKey*) {
  ExecutorSink<NcclExecutor> sink{*this, plan, buffers, seq};
  issue_whole_steps(plan, steps, sink);
}

void NcclExecutor::begin_step(const Plan&, const Step& s) {
  if (!s.comm.empty()) check(lib_.GroupStart(), "ncclGroupStart");
}

void NcclExecutor::end_step(const Plan&, const Step& s) {
  if (!s.comm.empty()) check(lib_.GroupEnd(), "ncclGroupEnd");
}

// NCCL matches messages by order between two ranks, not by tag. A signal is a message
// of no bytes, from a buffer that is never null.
NcclExecutor::Handle NcclExecutor::post_recv(const CommOp& op, std::byte* into, Tag) {
  const bool data = op.kind == CommKind::recv;
  check(lib_.Recv(data ? into : empty_.get(), data ? op.bytes : 0, bytes_type(), op.peer, comm_, stream()),
        "ncclRecv");
  return {};
}

NcclExecutor::Handle NcclExecutor::post_send(const CommOp& op, const std::byte* from, Tag) {
  const bool data = op.kind == CommKind::send;
  check(lib_.Send(data ? from : empty_.get(), data ? op.bytes : 0, bytes_type(), op.peer, comm_, stream()),
        "ncclSend");
  return {};
}

void NcclExecutor::local(const LocalOp& op, const CollArgs& args, int nranks) {
  device::enqueue_local(rt_, stream_, op, address(op.out), address(op.a), address(op.b), args, nranks);
}

void NcclExecutor::synchronize() {
  progress().phase.store("stream", std::memory_order_relaxed);
  rt_.synchronize(stream_);
}

void NcclExecutor::copy(void* dst, const void* src, std::size_t bytes) {
  rt_.copy(dst, src, bytes, device::CopyKind::device_to_device, stream_);
}

std::string NcclExecutor::async_error() const {
  ncclResult_t err = ncclSuccess;
  if (lib_.CommGetAsyncError(comm_, &err) != ncclSuccess) return "";
  if (err == ncclSuccess || err == ncclInProgress) return "";
  return lib_.GetErrorString(err);
}

void NcclExecutor::abort() { lib_.CommAbort(comm_); }

void NcclExecutor::bind(std::span<const std::size_t> scratch_sizes, CallBuffers buffers) {
  scratch_.bind(buffers_, scratch_sizes, buffers);
}

NcclExecutor* as_nccl(Executor& e) { return dynamic_cast<NcclExecutor*>(&e); }

}  // namespace collscope
