// The kernels on the host (and behind the emulated device): every body in a plain loop,
// in index order, on the calling thread; the stream is ignored (work is done when the
// call returns).
#include "kernel_set.hpp"

namespace collscope::layers {
namespace {

struct HostLaunch {
  static std::string name() { return "host"; }
  template <class Body>
  static void each(std::size_t n, const Body& body, device::Stream) {
    for (std::size_t i = 0; i < n; ++i) body(i);
  }
  template <class Body>
  static void rows(std::size_t rows, const Body& body, device::Stream s) {
    each(rows, body, s);
  }
};

}  // namespace

std::unique_ptr<Kernels> make_host_kernels() { return std::make_unique<KernelSet<HostLaunch>>(); }

}  // namespace collscope::layers
