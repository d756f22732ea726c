#include <string>

#include "collscope/build_config.hpp"
#include "collscope/errors.hpp"
#include "collscope/mpi_transport.hpp"
#include "collscope/transport_factory.hpp"
#if COLLSCOPE_HAVE_UCX
#include "collscope/ucx_transport.hpp"
#endif

namespace collscope {

std::unique_ptr<Transport> make_transport(TransportKind kind, MPI_Comm comm) {
  switch (kind) {
    case TransportKind::mpi: return std::make_unique<MpiTransport>(comm);
    case TransportKind::ucx:
#if COLLSCOPE_HAVE_UCX
      return std::make_unique<UcxTransport>(comm);
#else
      throw UsageError("this build has no UCX transport (install libucx-dev and rebuild)");
#endif
    case TransportKind::nccl: break;
  }
  // NCCL's send/receive runs as an executor of its own (make_nccl_executor), not here.
  throw UsageError(COLLSCOPE_HAVE_NCCL ? "the NCCL transport is not implemented yet"
                                       : "this build has no NCCL transport");
}

std::vector<std::string> transport_environment(TransportKind kind) {
#if COLLSCOPE_HAVE_UCX
  if (kind == TransportKind::ucx) return ucx_environment();
#endif
  (void)kind;
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
