// A GPU's PCIe link as its driver reports it: the generation and width the link runs at
// now, and the most the GPU and its slot allow. Read through NVML, opened at run time
// (dlopen of libnvidia-ml.so.1, which the driver installs), so the probe builds and runs
// where there is none and says why it has no reading.
#pragma once

#include <string>

namespace collscope::acceptance {

struct PcieLink {
  bool known = false;
  std::string why;             // why it is not known
  unsigned generation = 0;     // nvmlDeviceGetCurrPcieLinkGeneration
  unsigned max_generation = 0; // nvmlDeviceGetMaxPcieLinkGeneration: this GPU in this system
  unsigned width = 0;          // nvmlDeviceGetCurrPcieLinkWidth (lanes)
  unsigned max_width = 0;      // nvmlDeviceGetMaxPcieLinkWidth
};

// The link of the GPU whose UUID is `uuid` ("GPU-..."), as NVML reports it at this moment.
// A link idles at a lower generation to save power: read it while the link is busy.
PcieLink read_pcie_link(const std::string& uuid);

}  // namespace collscope::acceptance
