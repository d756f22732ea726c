// One row of results: one (size, dtype, op) of one algorithm, everything rank 0 reports.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "collscope/executor.hpp"
#include "collscope/types.hpp"
#include "collscope/volume.hpp"

namespace collscope::bench {

struct Measurement {
  std::string collective, algorithm, transport;
  std::vector<std::string> transport_env;  // e.g. UCX_TLS=..., as set for this run
  MemoryKind memory = MemoryKind::host;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = -1;  // -1 for collectives without a root
  int nranks = 1;
  std::size_t count = 0, bytes = 0;
  bool in_place = false;
  // Parameters that shape the call and its data: --segment, --seed, --max-scratch.
  std::size_t segment_bytes = 0, max_scratch_bytes = 0;
  std::uint64_t seed = 0;
  std::string split;                  // all-to-all-v: the split pattern or file
  std::vector<std::uint64_t> splits;  // all-to-all-v: N x N elements, row = sender
  int iters = 0, warmup = 0;
  // How buffers crossed ranks ("host", "staged", "ipc", "cuda_aware", "nccl") and how the
  // row was timed (options.hpp: timing, graph_calls, blocking).
  std::string path = "host";
  std::string wait;  // device memory: how the host waited (spin, yield, block); "" on host
  std::string timing = "call";
  std::string ranks = "max";  // how the ranks' times combined: max, avg or min (--ranks)
  int graph_calls = 0;
  bool blocking = false;
  std::string vendor_call;  // a vendor row: what the library ran ("ncclAlltoAll", ...)
  std::string nccl_version;  // -t nccl rows: the library opened at run time ("2.28.9")
  // Device memory: each rank's GPU as a JSON object (name, uuid, pci_bus_id, ...).
  std::vector<std::string> gpus;

  std::vector<double> times_us;  // per iteration: the ranks' times combined (ranks)
  double time_us = 0, time_us_min = 0, time_us_max = 0;  // median, min, max
  double time_us_p25 = 0, time_us_p75 = 0;                // quartiles
  // (p75 - p25) / median; NaN (JSON null) with too few iterations to tell (program/stats.hpp).
  double time_spread = std::numeric_limits<double>::quiet_NaN();
  double noise_threshold = 0;  // --noise-threshold: time_spread above it makes the row noisy
  bool noisy = false;
  int round = -1;  // --round: the sweep round this row belongs to, -1 none
  double algbw_gbps = 0, busbw_gbps = 0;
  // Device memory: how the ranks shared their GPUs (collscope/runtime/gpu_sharing.hpp):
  // "exclusive", "time_sliced" or "mps"; "" on host memory.
  std::string gpu_sharing;
  // Vendor MPI rows: the Open MPI collective settings in effect (OMPI_MCA_coll_* of the
  // environment, "name=value" joined by spaces: a forced coll_tuned algorithm, a rules
  // file); "" when none.
  std::string mpi_coll_params;

  // Per rank, for one call. measured: empty when the transport cannot see the traffic
  // (vendor collectives); theory: empty when unknown.
  std::vector<RankVolume> measured, theory;
  std::vector<std::uint64_t> traffic_bytes;  // N x N, row = sender, column = receiver
  std::vector<std::uint64_t> theory_traffic_bytes;  // the same from the theory; empty: unknown
  std::vector<int> node_of_rank;
  // Device paths: the bytes each rank copied besides the wire (staged: to and from the
  // host; ipc: out of peers' memory), counted and from the theory; empty: host memory.
  std::vector<CopyVolume> copies, theory_copies;
  bool volume_checked = false, volume_ok = true;
  std::string volume_error;  // first disagreement of counted, planned and theory volume
  // Where `measured` comes from: "counted" (the executor's counter, hand-written rows),
  // "mpi_t:pml_monitoring" (the MPI library's own count, vendor rows), or "n/a: <why>".
  std::string volume_source;
  // A second, independent count of a hand-written row (--vendor-volume): the MPI
  // library's, which must agree with the counter; "" when there was none.
  std::string volume_witness;
  // Vendor rows with a measured volume: the hand-written algorithms whose exact theory
  // equals the measured traffic (collscope/runtime/identify.hpp), "a|b" or "unmatched"; the
  // closest one and how far off it is (bytes and messages summed over the N x N cells;
  // 0 when it matches). "" and -1 where nothing was matched.
  std::string vendor_algorithm, vendor_algorithm_closest;
  std::int64_t vendor_algorithm_off_bytes = -1, vendor_algorithm_off_msgs = -1;

  bool checked = false;  // -c 1
  std::uint64_t wrong = 0;
  int first_bad_rank = -1;
  std::int64_t first_bad_index = -1;

  // The cost model (collectives/model): NaN / "" when there is none. JSON null for NaN.
  double predicted_us = std::numeric_limits<double>::quiet_NaN();
  std::string model;  // the model file, "" if none
  // The textbook closed form's bytes per rank (docs/textbook-formulas.md), NaN if none.
  double textbook_sent_bytes = std::numeric_limits<double>::quiet_NaN();
  std::string textbook_formula;  // e.g. "2(N-1)/N x D", "" if none

  // Fills the time statistics (median, min, max, quartiles, spread, noisy against
  // noise_threshold), algbw_gbps and busbw_gbps from times_us.
  void summarise(double busbw_factor);
  // The rank that sent the most bytes (measured, else theory), or -1.
  int busiest_rank() const;
};

}  // namespace collscope::bench
