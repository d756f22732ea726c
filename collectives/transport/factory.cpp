#include <cstdlib>
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
    // Known problem: small back-to-back calls can hang when a rank leaves a call and
    // stops progressing UCX before its peer received everything (reproduced 8/8 with
    // UCX_TLS=tcp,self). Until that is fixed the transport is opt-in.
    const char* opt_in = std::getenv("COLLSCOPE_EXPERIMENTAL_UCX");
    if (!opt_in || std::string(opt_in) != "1")
      throw UsageError("the UCX transport is experimental (it can hang); set "
                       "COLLSCOPE_EXPERIMENTAL_UCX=1 to use it anyway");
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
  if (auto* u = dynamic_cast<const UcxTransport*>(&t)) return u->open_requests();
#endif
  return -1;
}

}  // namespace collscope
