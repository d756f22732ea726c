// The NCCL executor: runs a schedule on GPU memory with NCCL's point-to-point calls.
// Each step's messages are one ncclGroupStart/ncclGroupEnd of ncclSend and ncclRecv;
// its reductions and copies follow as kernels on the same stream. Nothing waits on the
// host inside a call: the stream orders everything (a step's kernels after its
// messages, the next step's messages after those kernels), so a call can be captured in
// a CUDA graph. A signal is a message of no bytes (NCCL 2.12.10 and later deliver those).
//
// The communicator is one per executor, made over MPI (rank 0's unique id broadcast)
// after checking the ranks' GPUs: NCCL before 2.30 refuses two ranks on one GPU
// ("Duplicate GPU detected"), so that is said first, in one line.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "collscope/device/runtime.hpp"
#include "collscope/executor.hpp"

namespace collscope {

// Collective over comm; the device is already chosen (choose_device). Throws UsageError
// on every rank when NCCL cannot start: no library, or ranks sharing a GPU it refuses.
std::unique_ptr<Executor> make_nccl_executor(device::Runtime& rt, MPI_Comm comm,
                                             const std::vector<int>& node_of_rank);

// Why several ranks on one GPU cannot run, or "": NCCL from 2.30 on allows them when
// NCCL_MULTI_RANK_GPU_ENABLE=1. `gpu_of_rank` holds each rank's GPU UUID.
std::string shared_gpu_refusal(const std::vector<std::string>& gpu_of_rank,
                               const std::vector<int>& node_of_rank, int nccl_version,
                               bool multi_rank_enabled);

// The version of the NCCL library opened at run time ("2.28.9"), or "" when none opens.
std::string nccl_runtime_version();

// The NCCL_* variables set for this run, "NAME=value" each (the run's metadata).
std::vector<std::string> nccl_environment();

}  // namespace collscope
