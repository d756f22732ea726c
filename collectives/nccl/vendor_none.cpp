// A build without NCCL: the NCCL baselines exist in the table (their binaries start and
// say why they cannot run), but -t nccl is refused before any of them is called.
#include "collscope/errors.hpp"
#include "collscope/vendor_nccl.hpp"

namespace collscope::vendor {
namespace {
[[noreturn]] void none() { throw UsageError("this build has no NCCL"); }
}  // namespace

void nccl_allreduce(Comm&, const CollArgs&) { none(); }
void nccl_reduce_scatter(Comm&, const CollArgs&) { none(); }
void nccl_allgather(Comm&, const CollArgs&) { none(); }
void nccl_broadcast(Comm&, const CollArgs&) { none(); }
void nccl_reduce(Comm&, const CollArgs&) { none(); }
void nccl_gather(Comm&, const CollArgs&) { none(); }
void nccl_scatter(Comm&, const CollArgs&) { none(); }
void nccl_alltoall(Comm&, const CollArgs&) { none(); }
std::string nccl_reduce_scatter_impl(int, const CollArgs&) { return "ncclReduceScatter"; }
std::string nccl_allgather_impl(int, const CollArgs&) { return "ncclAllGather"; }
std::string nccl_gather_impl(int, const CollArgs&) { return "ncclGather"; }
std::string nccl_scatter_impl(int, const CollArgs&) { return "ncclScatter"; }
std::string nccl_alltoall_impl(int, const CollArgs&) { return "ncclAlltoAll"; }

}  // namespace collscope::vendor
