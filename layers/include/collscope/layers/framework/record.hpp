// One layer run's record (rank 0): what ran, the verification, the volume per call site
// against theory, the time split, the textbook figure; printed as a table or JSON lines.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collscope/layers/framework/layer.hpp"
#include "collscope/volume.hpp"

namespace collscope::layers {

// One planned call site, every world rank's view of it.
struct SiteVolume {
  PlannedCall call;
  std::string algorithm;
  bool vendor = false;           // bytes not measured (the library's own collective)
  int group_size = 1;
  DataType dtype = DataType::float32;  // what travels (the storage dtype unless the call says)
  std::size_t bytes = 0;         // count x element size
  std::vector<RankVolume> measured;  // by world rank; empty when not measured
  std::vector<RankVolume> theory;    // by world rank; empty when unknown
  std::optional<double> closed_form_bytes;  // the algorithm's closed form for D = bytes
  std::string closed_form;                  // its text, "2(N-1)/N x D"
  // Per timed iteration, the slowest rank's: the call's span on its stream and the part
  // of it no compute covered (timeline.hpp); empty when the calls did not match the plan.
  std::vector<double> time_us, exposed_us;
};

struct LayerRecord {
  std::string program, layer, scheme, transport;
  std::vector<std::string> transport_env;
  ParallelConfig config;
  bool sp = false;
  DataType storage = DataType::float32;
  Passes passes;
  nlohmann::ordered_json shape;
  std::uint64_t seed = 1;
  std::map<std::string, std::string, std::less<>> algorithms;  // collective -> name
  int iters = 0, warmup = 0;
  // Where it ran: "host" or "device" memory; the collectives' path ("host", "staged",
  // "ipc", "cuda_aware", "nccl"); how the host waits ("" on host memory); the device
  // runtime ("" on host memory, "cuda", "emulated"); the GEMM ("openblas", "cublas
  // 13.0.2"); rank 0's GPU ("" on host memory); --overlap.
  std::string memory = "host", path = "host", wait, device_runtime, gemm, gpu;
  bool overlap = false;
  // How the ranks shared their GPUs ("" on host memory; collscope/runtime/gpu_sharing.hpp),
  // the threshold that makes the record noisy (--noise-threshold) and its sweep round (--round).
  std::string gpu_sharing;
  double noise_threshold = 0.2;
  int round = -1;
  // Per timed iteration, the slowest rank's (timeline.hpp): the passes, the compute
  // stream's busy time, the collectives' spans (their union), the part of them no compute
  // covered, and comm - exposed; the GEMMs' time on the compute stream.
  std::vector<double> total_us, comm_us, compute_us, exposed_us, hidden_us, gemm_us;
  double gemm_flop = 0;  // one iteration's GEMMs on the busiest rank
  std::vector<TensorCheck> checks;
  std::vector<SiteVolume> sites;
  bool volume_measured = false;  // every site counted and has a theory
  std::string volume_error;      // empty: measured == theory at every site and rank
  TextbookFigure textbook_figure;

  bool verified() const;  // every check passed (and there is at least one)
  bool volume_ok() const { return volume_error.empty(); }
  bool passed() const { return verified() && volume_ok(); }
};

// Fields in a fixed, readable order (identity, time, verification, volume).
nlohmann::ordered_json to_json(const LayerRecord& r);
void print_table(std::ostream& os, const LayerRecord& r);

}  // namespace collscope::layers
