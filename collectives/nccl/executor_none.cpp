// A build without NCCL: -t nccl says so.
#include "collscope/errors.hpp"
#include "collscope/nccl/nccl_executor.hpp"

namespace collscope {

std::unique_ptr<Executor> make_nccl_executor(device::Runtime&, MPI_Comm, const std::vector<int>&) {
  throw UsageError("this build has no NCCL (rebuild where nccl.h is installed)");
}

std::string shared_gpu_refusal(const std::vector<std::string>&, const std::vector<int>&, int, bool) {
  return "";
}

std::string nccl_runtime_version() { return ""; }

std::vector<std::string> nccl_environment() { return {}; }

}  // namespace collscope
