// What describes one run (one invocation of a binary): the /runs table of a results file.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace collscope::results {

// One rank's GPU (device memory runs): the /run_gpus table.
struct RunGpu {
  int rank = 0;
  int device = -1;  // CUDA ordinal on its node
  std::string name, uuid, pci_bus_id;
  std::uint64_t memory_bytes = 0;
  int driver_version = 0, runtime_version = 0;  // cudaDriverGetVersion, cudaRuntimeGetVersion
  bool emulated = false;
  // Version 5: how this rank shared its GPU (exclusive, mps, time_sliced:
  // collscope/runtime/gpu_sharing.hpp) and whether its context was an MPS client.
  std::string gpu_sharing;
  bool mps_client = false;
};

// The machine under the run (version 5), as the run saw it at its start: what can make
// its times untrustworthy. Collected by collect_run_attributes.
struct MachineState {
  int host_cores = 0;          // CPUs of the host with the fewest (online, within a cgroup quota)
  bool oversubscribed = false;  // a host runs more of the job's ranks than it has cores
  double load_avg_1m = std::numeric_limits<double>::quiet_NaN();  // the highest of the hosts'
  std::string cpu_governor;    // rank 0's host's cpufreq governor, "" unreadable
  std::string busy_processes;  // processes outside the job running at the start, "host: name[pid] ..."
  std::vector<std::string> warnings;  // one line each: why a figure may not be trusted
};

struct RunAttributes {
  std::string run_uuid;       // 32 random hex digits: tells runs apart across merges
  std::string program;        // argv[0] without its directory
  std::string suite_version;  // COLLSCOPE_VERSION
  std::string git_revision;   // at configure time; "-dirty" when the tree had changes
  std::string command_line;
  std::string start_utc;             // 2025-01-31T12:34:56Z
  std::vector<std::string> hosts;    // distinct host names, in the order of their first rank
  int world_size = 1;
  int nnodes = 1;
  int ranks_per_node = 1;            // on the host with the most ranks
  std::string mpi_library;           // MPI_Get_library_version, first line
  std::string mpi_version;           // MPI_Get_version: "3.1"
  std::string ucx_version;           // ucp_get_version_string(), "" without UCX
  std::string nccl_version;          // the build's nccl.h, "" without NCCL
  std::string cuda_version;          // the build's CUDA toolkit, "" without CUDA
  std::string slurm_job_id, slurm_array_job_id, slurm_array_task_id, slurm_nodelist;  // "" outside Slurm
  // Device memory runs (version 2): the device runtime ("cuda", "emulated"), every rank's
  // GPU, and the NCCL library found at run time ("" where none was used).
  std::string device_runtime;
  std::vector<RunGpu> gpus;
  std::string nccl_runtime_version;
  // Version 5: the machine under the run; whether the MPI library takes device pointers
  // (MPIX_Query_cuda_support: "yes", "no", "unknown" where the library has no such query);
  // the memory types this process's UCX context supports ("host,cuda", "": none made).
  MachineState machine;
  std::string mpi_cuda_aware;
  std::string ucx_memory_types;
};

// Collective over `comm` (every rank's host name is gathered, on every rank; the machine
// state is complete on rank 0).
RunAttributes collect_run_attributes(int argc, char** argv, MPI_Comm comm);

// The machine state alone: collective over `comm`, complete on rank 0.
MachineState collect_machine_state(MPI_Comm comm);

// The same without MPI (one host, world size 1, no MPI library): for tools and tests.
RunAttributes local_run_attributes(int argc, const char* const* argv);

}  // namespace collscope::results
