#include "collscope/layers/framework/group_comm.hpp"

#include <string>

#include "collscope/agree.hpp"
#include "collscope/errors.hpp"
#include "collscope/program/node_map.hpp"

namespace collscope::layers {

GroupComm::GroupComm(const ParallelConfig& config, GroupKind kind, MPI_Comm world,
                     const BackendSpec& spec)
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
  // One group's backend may fail where another's does not (ipc across nodes): every
  // rank of the world stops alike.
  std::string problem;
  try {
    backend_ = make_backend(spec, split_, program::node_of_rank(split_));
  } catch (const UsageError& e) {
    problem = e.what();
  }
  agree_or_throw(world, problem);
  comm_ = std::make_unique<Comm>(backend_->executor(), split_);
}

GroupComm::~GroupComm() {
  comm_.reset();
  backend_.reset();
  if (split_ != MPI_COMM_NULL) MPI_Comm_free(&split_);
}

}  // namespace collscope::layers
