#include "collscope/agree.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/errors.hpp"
#include "collscope/host_executor.hpp"
#include "collscope/nccl/nccl_executor.hpp"
#include "collscope/transport_factory.hpp"

namespace collscope {
namespace {

int local_rank(MPI_Comm comm) {
  int rank = 0, local = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

class HostBackend final : public Backend {
 public:
  HostBackend(TransportKind transport, MPI_Comm comm)
      : transport_(make_transport(transport, comm)), executor_(*transport_) {}
  Executor& executor() override { return executor_; }

 private:
  std::unique_ptr<Transport> transport_;
  HostExecutor executor_;
};

class DeviceBackend final : public Backend {
 public:
  explicit DeviceBackend(std::unique_ptr<Executor> e, device::Info gpu) : executor_(std::move(e)) {
    gpu_ = std::move(gpu);
  }
  Executor& executor() override { return *executor_; }

 private:
  std::unique_ptr<Executor> executor_;
};

// The device runtime, or why there is none, agreed by every rank.
device::Runtime& agreed_runtime(MPI_Comm comm) {
  agree_or_throw(comm, device::unavailable_reason());
  return device::runtime();
}

}  // namespace

int choose_device(device::Runtime& rt, const std::vector<int>& device_map, MPI_Comm comm) {
  const int local = local_rank(comm);
  const int count = rt.device_count();
  int device = device_map.empty() ? local % count
                                  : device_map[static_cast<std::size_t>(local) % device_map.size()];
  std::string problem;
  if (device < 0 || device >= count)
    problem = "--device-map gives local rank " + std::to_string(local) + " GPU " +
              std::to_string(device) + ", but its node has " + std::to_string(count) + " GPU(s)";
  agree_or_throw(comm, problem);
  try {
    rt.select(device);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  agree_or_throw(comm, problem);
  return device;
}

std::unique_ptr<Backend> make_backend(const BackendSpec& spec, MPI_Comm comm,
                                      const std::vector<int>& node_of_rank) {
  if (spec.memory == MemoryKind::host) {
    if (spec.transport == TransportKind::nccl)
      throw UsageError("-t nccl moves GPU memory: it needs -m device");
    return std::make_unique<HostBackend>(spec.transport, comm);
  }
  device::Runtime& rt = agreed_runtime(comm);
  choose_device(rt, spec.device_map, comm);
  device::Info gpu = rt.info();
  if (spec.transport == TransportKind::nccl) {
    if (spec.path) throw UsageError("--path applies to -t mpi and ucx: NCCL moves GPU memory itself");
    return std::make_unique<DeviceBackend>(make_nccl_executor(rt, comm, node_of_rank), gpu);
  }
  std::string problem;
  std::unique_ptr<Executor> e;
  try {
    e = std::make_unique<DeviceExecutor>(rt, spec.path, spec.transport, comm, node_of_rank,
                                         spec.device);
  } catch (const UsageError& u) {
    problem = u.what();
  }
  agree_or_throw(comm, problem);
  return std::make_unique<DeviceBackend>(std::move(e), gpu);
}

}  // namespace collscope
