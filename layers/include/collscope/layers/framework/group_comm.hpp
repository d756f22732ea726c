// A rank group (groups.hpp) as a communicator the hand-written collectives can run on:
// MPI_Comm_split of the world by group, and over it the backend the command line chose
// (collscope/runtime/backend.hpp: -m host: a transport -t mpi|ucx and the host executor; -m
// device: the device executor on --path cuda_aware|staged|ipc over -t mpi|ucx, or the
// NCCL executor, -t nccl), whose executor counts what it sends, and a Comm over it. Ranks
// inside the group are numbered by their position in it, so a collective on a TP group is
// counted per group, and each world rank's counter holds exactly what that rank sent.
//
// UCX: each group gets its own UCP context and worker, wired up among the group's ranks.
// Device memory: each group's executor has its own stream (stream()); NCCL a
// communicator per group.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>

#include "collscope/runtime/backend.hpp"
#include "collscope/comm.hpp"
#include "collscope/layers/framework/groups.hpp"

namespace collscope::layers {

class GroupComm {
 public:
  // Collective over `world`: every rank builds the same kinds in the same order.
  GroupComm(const ParallelConfig& config, GroupKind kind, MPI_Comm world, const BackendSpec& spec);
  ~GroupComm();
  GroupComm(const GroupComm&) = delete;
  GroupComm& operator=(const GroupComm&) = delete;

  GroupKind kind() const { return kind_; }
  const GroupPosition& position() const { return position_; }
  int size() const { return static_cast<int>(position_.members.size()); }
  Comm& comm() { return *comm_; }
  Executor& executor() { return backend_->executor(); }
  Traffic& traffic() { return executor().traffic(); }
  // The executor's stream (null on host memory).
  device::Stream stream() { return static_cast<device::Stream>(executor().queue().handle); }
  std::string path() { return executor().path(); }
  const std::optional<device::Info>& gpu() const { return backend_->gpu(); }
  // Collective over the group (device memory: peers unmap what their owners freed).
  void release_freed_buffers() { executor().release_freed_buffers(); }

 private:
  GroupKind kind_;
  GroupPosition position_;
  MPI_Comm split_ = MPI_COMM_NULL;  // also what the vendor collectives run on
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Comm> comm_;
};

}  // namespace collscope::layers
