// The MPI library's own collectives, the baselines the hand-written algorithms run
// beside (collectives/vendor/mpi.cpp). Each runs on Comm::mpi_comm(); its traffic is
// the library's business, so it is neither counted nor predicted.
#pragma once

#include <optional>
#include <string>

#include "collscope/collective.hpp"

namespace collscope::vendor {

void mpi_allreduce(Comm&, const CollArgs&);
void mpi_reduce_scatter(Comm&, const CollArgs&);
void mpi_allgather(Comm&, const CollArgs&);
void mpi_broadcast(Comm&, const CollArgs&);
void mpi_reduce(Comm&, const CollArgs&);
void mpi_gather(Comm&, const CollArgs&);
void mpi_scatter(Comm&, const CollArgs&);
void mpi_alltoall(Comm&, const CollArgs&);
void mpi_alltoallv(Comm&, const CollArgs&);
void mpi_barrier(Comm&, const CollArgs&);

// MPI counts are int: the call's count must fit.
std::optional<std::string> mpi_int_count(int nranks, const CollArgs&);
// MPI_Alltoallv: an N x N matrix whose parts and packed offsets all fit in an int.
std::optional<std::string> mpi_alltoallv_limits(int nranks, const CollArgs&);

inline constexpr VendorCall kMpiAllreduce{"MPI_Allreduce", mpi_allreduce, mpi_int_count};
inline constexpr VendorCall kMpiReduceScatter{"MPI_Reduce_scatter(_block)", mpi_reduce_scatter,
                                              mpi_int_count};
inline constexpr VendorCall kMpiAllgather{"MPI_Allgather(v)", mpi_allgather, mpi_int_count};
inline constexpr VendorCall kMpiBroadcast{"MPI_Bcast", mpi_broadcast, mpi_int_count};
inline constexpr VendorCall kMpiReduce{"MPI_Reduce", mpi_reduce, mpi_int_count};
inline constexpr VendorCall kMpiGather{"MPI_Gather(v)", mpi_gather, mpi_int_count};
inline constexpr VendorCall kMpiScatter{"MPI_Scatter(v)", mpi_scatter, mpi_int_count};
inline constexpr VendorCall kMpiAlltoall{"MPI_Alltoall", mpi_alltoall, mpi_int_count};
inline constexpr VendorCall kMpiAlltoallv{"MPI_Alltoallv", mpi_alltoallv, mpi_alltoallv_limits};
inline constexpr VendorCall kMpiBarrier{"MPI_Barrier", mpi_barrier, nullptr};

}  // namespace collscope::vendor
