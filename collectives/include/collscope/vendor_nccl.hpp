// NCCL's own collectives, the GPU baselines (collectives/nccl/vendor.cpp), called the
// way nccl-tests calls them, on the NCCL executor's communicator and stream. Blocks of
// the uneven rule (collective.hpp) take grouped calls NCCL's equal-block collectives
// cannot: one ncclBroadcast (all-gather) or ncclReduce (reduce-scatter) per block, or
// ncclSend / ncclRecv (gather, scatter); so do ncclAlltoAll, ncclGather and ncclScatter
// when the library is older than 2.28. The row names what ran (implementation()).
// avg is reduced as sum and divided afterwards by the caller (run_collective).
#pragma once

#include <optional>
#include <string>

#include "collscope/collective.hpp"

namespace collscope::vendor {

void nccl_allreduce(Comm&, const CollArgs&);
void nccl_reduce_scatter(Comm&, const CollArgs&);
void nccl_allgather(Comm&, const CollArgs&);
void nccl_broadcast(Comm&, const CollArgs&);
void nccl_reduce(Comm&, const CollArgs&);
void nccl_gather(Comm&, const CollArgs&);
void nccl_scatter(Comm&, const CollArgs&);
void nccl_alltoall(Comm&, const CollArgs&);

std::string nccl_reduce_scatter_impl(int nranks, const CollArgs&);
std::string nccl_allgather_impl(int nranks, const CollArgs&);
std::string nccl_gather_impl(int nranks, const CollArgs&);
std::string nccl_scatter_impl(int nranks, const CollArgs&);
std::string nccl_alltoall_impl(int nranks, const CollArgs&);

inline constexpr VendorCall kNcclAllreduce{
    .function = "ncclAllReduce", .run = nccl_allreduce, .device_only = true};
inline constexpr VendorCall kNcclReduceScatter{
    .function = "ncclReduceScatter", .run = nccl_reduce_scatter,
    .implementation = nccl_reduce_scatter_impl, .device_only = true};
inline constexpr VendorCall kNcclAllgather{
    .function = "ncclAllGather", .run = nccl_allgather, .implementation = nccl_allgather_impl,
    .device_only = true};
inline constexpr VendorCall kNcclBroadcast{
    .function = "ncclBroadcast", .run = nccl_broadcast, .device_only = true};
inline constexpr VendorCall kNcclReduce{
    .function = "ncclReduce", .run = nccl_reduce, .device_only = true};
inline constexpr VendorCall kNcclGather{
    .function = "ncclGather", .run = nccl_gather, .implementation = nccl_gather_impl,
    .device_only = true};
inline constexpr VendorCall kNcclScatter{
    .function = "ncclScatter", .run = nccl_scatter, .implementation = nccl_scatter_impl,
    .device_only = true};
// ncclAlltoAll has no in-place form (nor do grouped sends and receives into one buffer).
inline constexpr VendorCall kNcclAlltoall{
    .function = "ncclAlltoAll", .run = nccl_alltoall, .implementation = nccl_alltoall_impl,
    .in_place = false, .device_only = true};

}  // namespace collscope::vendor
