// The backend of a run: the executor a benchmark's calls go through, with what it runs
// on (a transport, a GPU and its path, an NCCL communicator), made from the command
// line's choices:
//
//   -m host,   -t mpi|ucx   host executor over the transport
//   -m device, -t mpi|ucx   device executor: cuda_aware, staged or ipc (--path)
//   -m device, -t nccl      NCCL executor (collectives/nccl)
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collscope/device/device_executor.hpp"
#include "collscope/device/runtime.hpp"
#include "collscope/executor.hpp"
#include "collscope/transport.hpp"

namespace collscope {

struct BackendSpec {
  TransportKind transport = TransportKind::mpi;
  MemoryKind memory = MemoryKind::host;
  // Device memory over mpi or ucx; nullopt: cuda_aware where the library takes device
  // pointers, else staged.
  std::optional<DevicePath> path;
  // The GPU of each local rank (index = rank on its node, wrapping); empty: local rank
  // modulo the node's GPU count.
  std::vector<int> device_map;
  DeviceOptions device;  // the staged chunk, the ipc copy and fusion
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Executor& executor() = 0;
  // This rank's GPU, for device memory.
  const std::optional<device::Info>& gpu() const { return gpu_; }

 protected:
  std::optional<device::Info> gpu_;
};

// Collective over comm. Throws UsageError, on every rank alike, when the spec cannot run
// here (no GPU, a path the library cannot take, ranks on several nodes for ipc, ...).
std::unique_ptr<Backend> make_backend(const BackendSpec& spec, MPI_Comm comm,
                                      const std::vector<int>& node_of_rank);

// The GPU this rank uses: device_map[local rank % size], or local rank % the node's GPU
// count. Collective over comm; throws UsageError on every rank when a rank's is missing.
int choose_device(device::Runtime& rt, const std::vector<int>& device_map, MPI_Comm comm);

}  // namespace collscope
