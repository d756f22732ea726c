#include "pcie_link.hpp"

#include <dlfcn.h>

#include <string>

namespace collscope::acceptance {
namespace {

// The few NVML entry points used, with their C signatures (nvml.h): a status (0 is
// NVML_SUCCESS) and an opaque device handle.
using Status = int;
using Device = void*;
using Init = Status (*)();
using ByUuid = Status (*)(const char*, Device*);
using Query = Status (*)(Device, unsigned*);
using ErrorString = const char* (*)(Status);

class Nvml {
 public:
  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      why_ = "NVML (libnvidia-ml.so.1) cannot be opened";
      return;
    }
    auto init = symbol<Init>("nvmlInit_v2");
    by_uuid_ = symbol<ByUuid>("nvmlDeviceGetHandleByUUID");
    error_string_ = symbol<ErrorString>("nvmlErrorString");
    queries_[0] = symbol<Query>("nvmlDeviceGetCurrPcieLinkGeneration");
    queries_[1] = symbol<Query>("nvmlDeviceGetMaxPcieLinkGeneration");
    queries_[2] = symbol<Query>("nvmlDeviceGetCurrPcieLinkWidth");
    queries_[3] = symbol<Query>("nvmlDeviceGetMaxPcieLinkWidth");
    if (!init || !by_uuid_ || !queries_[0] || !queries_[1] || !queries_[2] || !queries_[3]) {
      why_ = "NVML lacks a PCIe link query";
      return;
    }
    if (const Status rc = init(); rc != 0) why_ = "nvmlInit failed: " + error(rc);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  // Kept open for the process's life: nvmlShutdown at exit is not needed.

  PcieLink read(const std::string& uuid) const {
    PcieLink link;
    if (!why_.empty()) {
      link.why = why_;
      return link;
    }
    Device device = nullptr;
    if (const Status rc = by_uuid_(uuid.c_str(), &device); rc != 0) {
      link.why = "NVML does not know GPU " + uuid + ": " + error(rc);
      return link;
    }
    unsigned* into[4] = {&link.generation, &link.max_generation, &link.width, &link.max_width};
    for (int i = 0; i < 4; ++i) {
      if (const Status rc = queries_[i](device, into[i]); rc != 0) {
        link.why = "NVML cannot read the PCIe link: " + error(rc);
        return link;
      }
    }
    link.known = true;
    return link;
  }

 private:
  template <class F>
  F symbol(const char* name) {
    return reinterpret_cast<F>(dlsym(lib_, name));
  }
  std::string error(Status rc) const {
    const char* text = error_string_ ? error_string_(rc) : nullptr;
    return text ? text : "NVML error " + std::to_string(rc);
  }

  void* lib_ = nullptr;
  std::string why_;
  ByUuid by_uuid_ = nullptr;
  ErrorString error_string_ = nullptr;
  Query queries_[4] = {};
};

}  // namespace

PcieLink read_pcie_link(const std::string& uuid) {
  static const Nvml nvml;
  return nvml.read(uuid);
}

}  // namespace collscope::acceptance
