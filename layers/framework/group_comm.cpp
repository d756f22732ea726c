#include "collscope/layers/framework/group_comm.hpp"

#include <string>

#include "collscope/errors.hpp"
#include "collscope/transport_factory.hpp"

namespace collscope::layers {

GroupComm::GroupComm(const ParallelConfig& config, GroupKind kind, MPI_Comm world,
                     std::string_view transport)
    : kind_(kind) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  position_ = group_of(config, kind, rank);
  MPI_Comm_split(world, position_.index, position_.position, &split_);
  int split_rank = -1;
  MPI_Comm_rank(split_, &split_rank);
  if (split_rank != position_.position)  // the key orders the split: cannot happen
    throw RuntimeError(std::string(group_name(kind)) + " group: rank " + std::to_string(rank) +
                       " is " + std::to_string(split_rank) + " in its communicator, expected " +
                       std::to_string(position_.position));
  transport_ = make_transport(transport, split_);
  executor_ = std::make_unique<HostExecutor>(*transport_);
  comm_ = std::make_unique<Comm>(*executor_, split_);
}

GroupComm::~GroupComm() {
  comm_.reset();
  executor_.reset();
  transport_.reset();
  if (split_ != MPI_COMM_NULL) MPI_Comm_free(&split_);
}

}  // namespace collscope::layers
