// Builds the transport a run asks for (-t mpi|ucx|nccl).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/transport.hpp"
#include "collscope/types.hpp"

namespace collscope {

// Throws UsageError for a transport this build does not have. Collective over comm.
std::unique_ptr<Transport> make_transport(TransportKind kind, MPI_Comm comm);
// The environment variables that shape a transport ("UCX_TLS=shm,tcp", ...), for the
// run's metadata; empty when none is set (or the transport reads none).
std::vector<std::string> transport_environment(TransportKind kind);
// Requests posted and not yet completed, for leak checks; -1 if the transport can't say.
int open_requests(const Transport& t);

}  // namespace collscope
