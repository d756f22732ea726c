#include "sample_rows.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "collscope/bench/measurement.hpp"
#include "collscope/bench/report.hpp"
#include "collscope/program/spread_fields.hpp"

namespace collscope::results::testing {
namespace {

using nlohmann::json;

std::vector<RankVolume> volumes(int n, std::int64_t i, std::uint64_t scale) {
  std::vector<RankVolume> v(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const auto k = static_cast<std::uint64_t>(i + r);
    v[static_cast<std::size_t>(r)] = RankVolume{scale * k, k + 1, scale * k + 3, k + 2};
  }
  return v;
}

std::vector<std::uint64_t> matrix(int n, std::int64_t i) {
  std::vector<std::uint64_t> m(static_cast<std::size_t>(n * n));
  for (std::size_t c = 0; c < m.size(); ++c) m[c] = static_cast<std::uint64_t>(i) * 7 + c;
  return m;
}

// A vendor collective: measured by the library and identified (i % 8 == 3), or nothing
// measured and why; no theory.
void fill_vendor(bench::Measurement& m, std::int64_t i) {
  if (i % 8 != 3) {
    m.volume_source = "n/a: pml_monitoring_enable=2 (filtered)";
    return;
  }
  m.volume_source = "mpi_t:pml_monitoring";
  m.measured = volumes(m.nranks, i, 32);
  m.traffic_bytes = matrix(m.nranks, i + 1);
  m.vendor_algorithm = i % 16 == 3 ? "ring|halving_doubling" : "unmatched";
  m.vendor_algorithm_closest = "ring";
  m.vendor_algorithm_off_bytes = i % 16 == 3 ? 0 : 4096 + i;
  m.vendor_algorithm_off_msgs = i % 16 == 3 ? 0 : 2;
}

void fill_vendor_or_counted(bench::Measurement& m, std::int64_t i) {
  if (i % 4 == 3) return fill_vendor(m, i);
  m.volume_source = "counted";
  if (i % 3 == 1) m.volume_witness = "mpi_t:pml_monitoring";
  m.measured = volumes(m.nranks, i, 64);
  m.theory = volumes(m.nranks, i, 64);
  m.traffic_bytes = matrix(m.nranks, i);
  m.volume_checked = true;
}

void fill_model(bench::Measurement& m, std::int64_t i) {
  if (i % 2 == 1) return;  // no model: NaN / ""
  m.predicted_us = 12.5 + static_cast<double>(i);
  m.model = "models/cluster-" + std::to_string(i) + ".json";
  m.textbook_sent_bytes = 2.0 * static_cast<double>(m.bytes);
  m.textbook_formula = "2(N-1)/N x D";
}

}  // namespace

json sample_collective(std::int64_t i) {
  bench::Measurement m;
  const bool alltoallv = i % 5 == 2;
  m.collective = alltoallv ? "alltoallv" : "allreduce";
  m.algorithm = i % 4 == 3 ? "mpi" : "ring";
  m.transport = i % 3 == 0 ? "ucx" : "mpi";
  if (i % 3 == 0) m.transport_env = {"UCX_TLS=shm,self", "UCX_NET_DEVICES=all"};
  m.dtype = i % 2 ? DataType::int32 : DataType::bfloat16;
  m.op = i % 2 ? ReduceOp::max : ReduceOp::sum;
  m.root = i % 6 == 1 ? 2 : -1;
  m.nranks = 1 + static_cast<int>(i % 5);
  m.count = static_cast<std::size_t>(i) * 3;
  m.bytes = static_cast<std::size_t>(1000 + i);
  m.in_place = i % 2 == 0;
  if (alltoallv) {
    m.split = i % 2 ? "skewed" : "file:splits/é-matrix.txt";
    m.splits = matrix(m.nranks, i + 1);
  }
  m.iters = static_cast<int>(i % 4);
  m.warmup = 2;
  m.ranks = i % 3 == 0 ? "max" : i % 3 == 1 ? "avg" : "min";
  for (int k = 0; k < m.iters; ++k) m.times_us.push_back(1.25 * (k + 1) + static_cast<double>(i));
  m.noise_threshold = i % 2 ? 0.2 : 0.05;
  m.round = static_cast<int>(i % 3) - 1;
  m.summarise(1.5);
  if (m.algorithm == "mpi" && i % 2) m.mpi_coll_params = "coll_tuned_allreduce_algorithm=4 coll_tuned_use_dynamic_rules=1";
  fill_vendor_or_counted(m, i);
  for (int r = 0; r < m.nranks; ++r) m.node_of_rank.push_back(r / 2);
  m.checked = i % 7 != 5;  // -c 0 now and then: wrong is null
  m.wrong = static_cast<std::uint64_t>(i % 3);
  m.first_bad_rank = m.wrong ? 0 : -1;
  m.first_bad_index = m.wrong ? 4'000'000'000'000 + i : -1;
  fill_model(m, i);
  if (i % 4 == 1) {  // a device row over ipc: how it waited, what it copied and reduced in place
    m.memory = MemoryKind::device;
    m.path = "ipc";
    m.gpu_sharing = i % 8 == 1 ? "mps" : "time_sliced";
    m.wait = i % 8 == 1 ? "spin" : "yield";
    for (int r = 0; r < m.nranks; ++r) {
      const auto b = static_cast<std::uint64_t>(100 * r + i);
      m.copies.push_back({0, 0, b, 2 * b});
      m.theory_copies.push_back({0, 0, b, 2 * b});
    }
  }
  return bench::to_json(m);
}

json sample_pingpong(std::int64_t i) {
  const int n = 2 + static_cast<int>(i % 3);
  json j;
  j["collective"] = "pingpong";
  j["algorithm"] = "pingpong";
  j["transport"] = "mpi";
  j["transport_env"] = json::array();
  j["memory"] = "host";
  j["nranks"] = n;
  j["bytes"] = 1000 + i;
  j["iters"] = 3;
  j["warmup"] = 1;
  if (i % 2 == 0) {  // one pair
    j["pair"] = {0, n - 1};
    j["time_us"] = 2.5;
    j["time_us_min"] = 2.0;
    j["time_us_max"] = 3.0 + static_cast<double>(i);
    j["times_us"] = {2.0, 2.5, 3.0 + static_cast<double>(i)};
    program::add_spread_fields(j, program::stats_of({2.0, 2.5, 3.0 + static_cast<double>(i)}), 0.2,
                               static_cast<int>(i % 3) - 1, "");
  } else {  // --pairs all
    j["pair"] = nullptr;
    j["pairs"] = "all";
    j["time_us"] = 4.5;
    j["time_us_min"] = 1.5;
    j["time_us_max"] = 9.0;
    program::add_spread_fields(j, program::stats_of({1.5, 2, 4.5, 7, 9.0}), 0.25, 2, "exclusive");
    j["slowest_pair"] = {0, 1};
    j["slowest_rank"] = 1;
    json lat = json::array(), bw = json::array();
    for (int a = 0; a < n; ++a) {
      std::vector<double> la, ba;
      for (int b = 0; b < n; ++b) {
        la.push_back(a == b ? 0.0 : 1.0 + a + b + static_cast<double>(i));
        ba.push_back(a == b ? 0.0 : 0.5 / (1.0 + a + b));
      }
      lat.push_back(la);
      bw.push_back(ba);
    }
    j["latency_us_matrix"] = lat;
    j["bw_gbps_matrix"] = bw;
  }
  j["algbw_gbps"] = 0.25;
  j["busbw_gbps"] = 0.25;
  const auto vols = volumes(n, i, 8);
  for (const char* key : {"sent_bytes", "recv_bytes", "sent_msgs", "recv_msgs", "theory_sent_bytes",
                          "theory_recv_bytes", "theory_sent_msgs", "theory_recv_msgs"}) {
    json a = json::array();
    for (const RankVolume& v : vols) {
      const std::string k = key;
      a.push_back(k.find("sent_bytes") != std::string::npos   ? v.sent_bytes
                  : k.find("recv_bytes") != std::string::npos ? v.recv_bytes
                  : k.find("sent_msgs") != std::string::npos  ? v.sent_msgs
                                                              : v.recv_msgs);
    }
    j[key] = a;
  }
  j["traffic_bytes"] = matrix(n, i);
  j["volume"] = "ok";
  j["wrong"] = i % 5 == 4 ? json(nullptr) : json(i % 2);
  j["first_bad_pair"] = i % 2 ? json{0, 1} : json(nullptr);
  std::vector<int> nodes(static_cast<std::size_t>(n), 0);
  j["node_of_rank"] = nodes;
  return j;
}

namespace {

json per_rank(int n, std::int64_t i, std::uint64_t scale) {
  json a = json::array();
  for (int r = 0; r < n; ++r) a.push_back(scale * static_cast<std::uint64_t>(i + r + 1));
  return a;
}

json layer_site(int n, std::int64_t i, int k, bool vendor) {
  json s;
  s["site"] = (k ? "bwd fc1 allreduce dX [T,H] #" : "fwd fc2 allreduce Y [T,H] #") + std::to_string(i);
  s["collective"] = "allreduce";
  s["algorithm"] = vendor ? "mpi" : "ring";
  s["group"] = k ? "dp" : "tp";
  s["group_size"] = n;
  s["count"] = 512 + i;
  s["dtype"] = k ? "float" : "bfloat16";
  if (i % 2 == 0) s["op"] = k ? "max" : "sum";  // absent: records from before the key
  s["bytes"] = 2 * (512 + i);
  for (const char* key : {"sent_bytes", "recv_bytes", "theory_sent_bytes", "theory_recv_bytes"})
    s[key] = vendor ? json(nullptr) : per_rank(n, i + k, 2);
  if (!vendor && i % 5 == 1) s["sent_bytes"][0] = 1;  // a volume mismatch
  s["closed_form"] = vendor ? "" : "2(N-1)/N x D";
  s["closed_form_sent_bytes"] = vendor ? json(nullptr) : json(2048.5 + static_cast<double>(i));
  s["volume"] = vendor ? "n/a" : i % 5 == 1 ? "MISMATCH" : "ok";
  s["time_us"] = i % 4 == 3 ? json(nullptr) : json(3.75 + static_cast<double>(i + k));
  s["exposed_us"] = i % 4 == 3 ? json(nullptr) : json(1.5);
  return s;
}

json layer_check(std::int64_t i, int k) {
  const bool broken = i % 4 == 1 && k == 0;  // non-finite: the errors are NaN, JSON null
  return {{"tensor", k == 0 ? "Y" : "dW" + std::to_string(k)},
          {"rel_l2_error", broken ? json(nullptr) : json(1.25e-7 * static_cast<double>(k + 1))},
          {"max_abs_error", broken ? json(nullptr) : json(4.5e-7 + static_cast<double>(i))},
          {"tolerance", 1e-5},
          {"max_abs_tolerance", k == 2 ? json(nullptr) : json(8.5e-5)},
          {"reduction_length", 128 + k},
          {"finite", !broken},
          {"pass", !broken}};
}

}  // namespace

json sample_layer(std::int64_t i) {
  const int n = 1 + static_cast<int>(i % 4);
  const bool vendor = i % 3 == 2;
  json j;
  j["layer"] = i % 2 ? "dp_grad" : "tp_mlp";
  j["program"] = i % 2 ? "layer_dp_grad" : "layer_tp_mlp";
  j["scheme"] = i % 2 ? "dp" : "tp";
  j["transport"] = i % 3 == 0 ? "ucx" : "mpi";
  j["transport_env"] = i % 3 == 0 ? json{"UCX_TLS=shm,self", "UCX_NET_DEVICES=all"} : json::array();
  const bool device = i % 3 == 1;  // where it ran (schema version 3)
  j["memory"] = device ? "device" : "host";
  j["path"] = device ? (i % 2 ? "nccl" : "ipc") : "host";
  j["wait"] = device ? "spin" : "";
  j["device_runtime"] = device ? "cuda" : "";
  j["gemm"] = device ? "cublas 13.0.2" : "openblas";
  j["gpu"] = device ? "NVIDIA H200" : "";
  j["overlap"] = device && i % 2 == 0;
  j["nranks"] = n;
  j["tp"] = i % 2 ? 1 : n;
  j["cp"] = 1;
  j["pp"] = 1;
  j["dp"] = i % 2 ? n : 1;
  j["ep"] = 1;
  j["etp"] = 1;
  j["sp"] = i % 5 == 3;
  j["dtype"] = i % 2 ? "float" : "bfloat16";
  j["passes"] = i % 3 == 1 ? "forward" : "both";
  j["shape"] = i % 2 ? json{{"S", 8}, {"B", 2}, {"T", 16}, {"H", 32}, {"O", 32 + i}}
                     : json{{"S", 8}, {"B", 2}, {"T", 16}, {"H", 32}, {"F", 128 + i}};
  j["seed"] = 1000 + i;
  j["algorithms"] = {{"allreduce", vendor ? "mpi" : "ring"}};
  j["iters"] = static_cast<int>(i % 4);
  j["warmup"] = 2;
  json times = json::array();
  for (int k = 0; k < j["iters"].get<int>(); ++k) times.push_back(10.25 * (k + 1) + static_cast<double>(i));
  j["time_us"] = times.empty() ? 0.0 : times[0].get<double>();
  j["time_us_min"] = times.empty() ? 0.0 : times[0].get<double>();
  j["time_us_max"] = times.empty() ? 0.0 : times.back().get<double>();
  program::add_spread_fields(j, program::stats_of(times.get<std::vector<double>>()), 0.2,
                             static_cast<int>(i % 2), device ? "mps" : "");
  j["compute_us"] = 1.5 + static_cast<double>(i);
  j["comm_us"] = 2.5;
  j["exposed_comm_us"] = 2.0;
  j["hidden_comm_us"] = 0.5;
  j["gemm_us"] = 1.25 + static_cast<double>(i);
  j["gemm_flop"] = 4096.0 * static_cast<double>(i + 1);
  j["gemm_tflops"] = i % 6 == 5 ? json(nullptr) : json(0.125 * static_cast<double>(i + 1));
  j["times_us"] = times;
  const int nchecks = i % 7 == 6 ? 0 : 1 + static_cast<int>(i % 3);
  j["pass"] = i % 4 != 1 && i % 5 != 1 && nchecks > 0;
  j["verified"] = i % 4 != 1 && nchecks > 0;
  j["rel_l2_error"] = nchecks == 0 || i % 4 == 1 ? json(nullptr) : json(1.25e-7);
  j["max_abs_error"] = nchecks == 0 || i % 4 == 1 ? json(nullptr) : json(4.5e-7);
  j["tolerance"] = nchecks == 0 || i % 4 == 1 ? json(nullptr) : json(1e-5);
  j["checks"] = json::array();
  for (int k = 0; k < nchecks; ++k) j["checks"].push_back(layer_check(i, k));
  const int nsites = 1 + static_cast<int>(i % 2);
  for (const char* key : {"sent_bytes", "recv_bytes", "theory_sent_bytes", "theory_recv_bytes"})
    j[key] = vendor ? json(nullptr) : per_rank(n, i, 2 * static_cast<std::uint64_t>(nsites));
  j["volume"] = vendor ? "n/a" : i % 5 == 1 ? "MISMATCH" : "ok";
  j["volume_error"] = i % 5 == 1 ? "rank 0 sent 1 bytes at 'fwd fc2', theory 2 (é)" : "";
  j["collectives"] = json::array();
  for (int k = 0; k < nsites; ++k) j["collectives"].push_back(layer_site(n, i, k, vendor));
  j["textbook_figure"] = {{"source", "Shoeybi et al. 2019 (Megatron-LM), section 3"},
                      {"formula", "2 Phi per allreduce, Phi = b x s x h"},
                      {"elements", 2048.0 + static_cast<double>(i)},
                      {"bytes", 8192.0},
                      {"explanation", std::string(600, 'x') + " the figure counts elements"},
                      {"exact_sent_bytes", vendor ? json(nullptr) : json(4096 + i)},
                      {"exact_over_formula", vendor ? json(nullptr) : json(0.5)}};
  return j;
}

std::int64_t sample_layer_index(const nlohmann::json& row) {
  return row.contains("seed") ? row["seed"].get<std::int64_t>() - 1000 : -1;
}

std::int64_t sample_index(const nlohmann::json& row) {
  return row.contains("bytes") ? row["bytes"].get<std::int64_t>() - 1000 : -1;
}

}  // namespace collscope::results::testing
