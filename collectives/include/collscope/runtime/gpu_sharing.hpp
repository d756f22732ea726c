// How a job's ranks share their GPUs, which decides what a device figure means:
//
//   exclusive    no other rank of the job uses this rank's GPU (a GPU per rank)
//   mps          others do, and this rank's context is a client of an MPS server: their
//                work runs on the GPU at once, as on GPUs of their own (short of the SMs
//                and memory bandwidth they share)
//   time_sliced  others do without MPS: the GPU runs one context at a time, in time
//                slices, so a rank waiting for another's flag waits for a context switch
//                (small-message times measure the scheduler)
//
// A row's value is its worst rank's (time_sliced before mps before exclusive): one rank
// off MPS puts the whole call behind the scheduler.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/device/runtime.hpp"

namespace collscope {

enum class GpuSharing { exclusive, mps, time_sliced };

std::string_view gpu_sharing_name(GpuSharing s);

struct GpuSharingOfJob {
  std::vector<GpuSharing> per_rank;  // indexed by rank of the communicator
  GpuSharing job = GpuSharing::exclusive;
  std::vector<bool> mps_client;  // per rank: its context is an MPS client
};

// The sharing of each rank's GPU, from each rank's host, GPU uuid and MPS flag.
// Collective over comm: every rank passes its GPU (nullopt: host memory, then the result
// is empty on every rank).
std::optional<GpuSharingOfJob> gpu_sharing_of(const std::optional<device::Info>& mine, MPI_Comm comm);

// The run's warning when ranks share a GPU without MPS (job == time_sliced).
std::string time_sliced_warning(const GpuSharingOfJob& sharing);

// The same from what was gathered (rank i on hosts[i], GPU uuids[i]): for tests.
GpuSharingOfJob gpu_sharing_from(const std::vector<std::string>& hosts,
                                 const std::vector<std::string>& uuids,
                                 const std::vector<bool>& mps_client);

}  // namespace collscope
