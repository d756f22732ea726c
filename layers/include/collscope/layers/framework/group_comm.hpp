// A rank group (groups.hpp) as a communicator the hand-written collectives can run on:
// MPI_Comm_split of the world by group, a transport on it (-t mpi|ucx), the host
// executor over the transport (which counts what it sends), and a Comm over it. Ranks inside the group
// are numbered by their position in it, so a collective on a TP group is counted per
// group, and each world rank's counter holds exactly what that rank sent.
//
// UCX: each group gets its own UCP context and worker, wired up among the group's ranks.
#pragma once

#include <mpi.h>

#include <memory>
#include <string_view>

#include "collscope/comm.hpp"
#include "collscope/host_executor.hpp"
#include "collscope/layers/framework/groups.hpp"
#include "collscope/transport.hpp"

namespace collscope::layers {

class GroupComm {
 public:
  // Collective over `world`: every rank builds the same kinds in the same order.
  GroupComm(const ParallelConfig& config, GroupKind kind, MPI_Comm world,
            std::string_view transport);
  ~GroupComm();
  GroupComm(const GroupComm&) = delete;
  GroupComm& operator=(const GroupComm&) = delete;

  GroupKind kind() const { return kind_; }
  const GroupPosition& position() const { return position_; }
  int size() const { return static_cast<int>(position_.members.size()); }
  Comm& comm() { return *comm_; }
  Traffic& traffic() { return executor_->traffic(); }

 private:
  GroupKind kind_;
  GroupPosition position_;
  MPI_Comm split_ = MPI_COMM_NULL;  // also what the vendor collectives run on
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<HostExecutor> executor_;
  std::unique_ptr<Comm> comm_;
};

}  // namespace collscope::layers
