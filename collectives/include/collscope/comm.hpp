// Comm: what a collective call runs on. An executor (how schedules run: host, cuda,
// nccl), the MPI communicator the vendor baselines use, and the call sequence number
// that keeps the tags of back-to-back calls apart.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "collscope/coll_args.hpp"
#include "collscope/executor.hpp"

namespace collscope {

class Comm {
 public:
  // `mpi_comm` is used only by the vendor baselines (MPI_Allreduce, ...).
  Comm(Executor& executor, MPI_Comm mpi_comm) : executor_(executor), mpi_comm_(mpi_comm) {}

  int rank() const { return executor_.rank(); }
  int size() const { return executor_.size(); }
  Executor& executor() { return executor_; }
  MPI_Comm mpi_comm() const { return mpi_comm_; }
  Traffic& traffic() { return executor_.traffic(); }

  // A fresh sequence number for the next call's tags.
  std::uint32_t next_seq() { return ++seq_; }
  std::uint32_t seq() const { return seq_; }

 private:
  Executor& executor_;
  MPI_Comm mpi_comm_;
  std::uint32_t seq_ = 0;
};

}  // namespace collscope
