#include <string>

#include "collscope/build_config.hpp"
#include "collscope/errors.hpp"
#include "collscope/mpi_transport.hpp"
#include "collscope/transport_factory.hpp"
#if COLLSCOPE_HAVE_UCX
#include "collscope/ucx_transport.hpp"
#endif

namespace collscope {

std::unique_ptr<Transport> make_transport(std::string_view name, MPI_Comm comm) {
  if (name == "mpi") return std::make_unique<MpiTransport>(comm);
  if (name == "ucx") {
#if COLLSCOPE_HAVE_UCX
    return std::make_unique<UcxTransport>(comm);
#else
    throw UsageError("this build has no UCX transport (install libucx-dev and rebuild)");
#endif
  }
  if (name == "nccl")
    throw UsageError(COLLSCOPE_HAVE_NCCL ? "the NCCL transport is not implemented yet"
                                         : "this build has no NCCL transport");
  throw UsageError("unknown transport '" + std::string(name) + "' (expected mpi, ucx or nccl)");
}

std::vector<std::string> transport_environment(std::string_view name) {
#if COLLSCOPE_HAVE_UCX
  if (name == "ucx") return ucx_environment();
#endif
  (void)name;
  return {};
}

int open_requests(const Transport& t) {
  if (auto* m = dynamic_cast<const MpiTransport*>(&t)) return m->open_requests();
#if COLLSCOPE_HAVE_UCX
  // Both our slots and the requests UCX handed out must be back to zero.
  if (auto* u = dynamic_cast<const UcxTransport*>(&t))
    return u->open_requests() + static_cast<int>(u->live_ucx_requests());
#endif
  return -1;
}

}  // namespace collscope
