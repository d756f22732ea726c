#include "collscope/bench/report.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collscope/program/text.hpp"

namespace collscope::bench {
namespace {

using program::fmt;

// ok / MISMATCH: checked against theory; measured: counted by the library, no single
// theory (a vendor row); n/a: nothing counted.
std::string volume_status(const Measurement& m) {
  if (!m.volume_checked) return m.measured.empty() ? "n/a" : "measured";
  return m.volume_ok ? "ok" : "MISMATCH";
}

// A number that is -1 when missing, as JSON (null then).
nlohmann::json or_null(std::int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

template <class T, class F>
nlohmann::json per_rank(const std::vector<T>& v, F field) {
  if (v.empty()) return nullptr;  // unknown: vendor collective, no theory, host memory
  nlohmann::json a = nlohmann::json::array();
  for (const T& r : v) a.push_back(field(r));
  return a;
}

// Bytes each rank sends to ranks on its own node and on other nodes, from an N x N
// traffic matrix (row = sender); null where the matrix is unknown.
std::pair<nlohmann::json, nlohmann::json> intra_inter(const Measurement& m,
                                                      const std::vector<std::uint64_t>& traffic) {
  if (traffic.empty()) return {nullptr, nullptr};
  const std::size_t n = m.node_of_rank.size();
  std::vector<std::uint64_t> intra(n, 0), inter(n, 0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t p = 0; p < n; ++p)
      (m.node_of_rank[r] == m.node_of_rank[p] ? intra : inter)[r] += traffic[r * n + p];
  return {intra, inter};
}

}  // namespace

void print_table_header(std::ostream& os, const RunInfo& info) {
  const Options& o = *info.options;
  os << "# collscope " << info.collective << "/" << info.algorithm << "  transport "
     << info.transport << "  memory " << memory_name(o.memory) << "  nranks " << info.nranks
     << "  " << (o.in_place ? "in-place" : "out-of-place") << "  iters " << o.iters
     << "  warmup " << o.warmup << "  check " << (o.check ? 1 : 0) << "\n";
  if (o.transport == TransportKind::ucx) {
    os << "# UCX environment:";
    for (const std::string& e : info.transport_env) os << " " << e;
    os << (info.transport_env.empty() ? " (UCX defaults)\n" : "\n");
  }
  os << "# time: median over iterations of the slowest rank; spread: interquartile range / "
        "median (! noisy: above " << fmt("%g", o.noise_threshold * 100) << "%); GB = 1e9 B; "
        "sent/theory: bytes the busiest rank sent in one call (measured / exact theory)\n";
  for (const std::string& w : info.warnings) os << "# warning: " << w << "\n";
  os << "#\n";
  char line[256];
  std::snprintf(line, sizeof line, "# %12s %12s %8s %6s %5s %9s %11s %11s %11s %7s %8s %8s %6s %14s %14s %8s\n",
                "size(B)", "count", "type", "redop", "root", "transport", "time(us)", "min(us)", "max(us)",
                "spread", "algbw", "busbw", "#wrong", "sent(B)", "theory(B)", "volume");
  os << line;
  std::snprintf(line, sizeof line, "# %12s %12s %8s %6s %5s %9s %11s %11s %11s %7s %8s %8s %6s %14s %14s %8s\n",
                "", "(elements)", "", "", "", "", "", "", "", "(IQR)", "(GB/s)", "(GB/s)", "", "", "", "");
  os << line << std::flush;
}

void print_table_row(std::ostream& os, const Measurement& m) {
  const int busiest = m.busiest_rank();
  const std::string sent =
      busiest >= 0 && !m.measured.empty() ? std::to_string(m.measured[busiest].sent_bytes) : "n/a";
  const std::string theory =
      busiest >= 0 && !m.theory.empty() ? std::to_string(m.theory[busiest].sent_bytes) : "n/a";
  const std::string wrong = m.checked ? std::to_string(m.wrong) : "N/A";
  char line[320];
  std::snprintf(line, sizeof line, "  %12zu %12zu %8s %6s %5d %9s %11s %11s %11s %7s %8s %8s %6s %14s %14s %8s\n",
                m.bytes, m.count, std::string(dtype_name(m.dtype)).c_str(),
                std::string(op_name(m.op)).c_str(), m.root, m.transport.c_str(), fmt("%.2f", m.time_us).c_str(),
                fmt("%.2f", m.time_us_min).c_str(), fmt("%.2f", m.time_us_max).c_str(),
                program::spread_text(m.time_spread, m.noisy).c_str(),
                fmt("%.3f", m.algbw_gbps).c_str(), fmt("%.3f", m.busbw_gbps).c_str(),
                wrong.c_str(), sent.c_str(), theory.c_str(), volume_status(m).c_str());
  os << line;
  if (m.wrong > 0)
    os << "#   first wrong element: rank " << m.first_bad_rank << ", index " << m.first_bad_index
       << "\n";
  if (!m.volume_ok) os << "#   volume mismatch: " << m.volume_error << "\n";
  if (!m.vendor_algorithm.empty()) {
    os << "#   vendor algorithm: " << m.vendor_algorithm;
    if (m.vendor_algorithm == "unmatched")
      os << " (closest " << m.vendor_algorithm_closest << ", off by " << m.vendor_algorithm_off_bytes
         << " B and " << m.vendor_algorithm_off_msgs << " messages)";
    os << "\n";
  } else if (m.volume_source.rfind("n/a", 0) == 0) {
    os << "#   volume " << m.volume_source << "\n";
  }
  os << std::flush;
}

void print_table_footer(std::ostream& os, const TableTotals& t) {
  os << "# rows: " << t.rows << "   wrong elements: " << t.wrong << (t.wrong ? " FAILED" : " OK")
     << "   volume mismatches: " << t.volume_mismatches << (t.volume_mismatches ? " FAILED" : " OK")
     << "   noisy: " << t.noisy << "\n# Avg bus bandwidth    : "
     << fmt("%.3f", t.rows == 0 ? 0.0 : t.busbw_sum / t.rows) << " GB/s\n" << std::flush;
}

namespace {

// NaN (not measured, no model) as JSON null.
nlohmann::json or_null_if_nan(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

// An empty list (unknown) as JSON null.
template <class T>
nlohmann::json list_or_null(const std::vector<T>& v) {
  return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
}

// What was run: the collective, its arguments and how it was called.
void put_setup(nlohmann::json& j, const Measurement& m) {
  j["collective"] = m.collective;
  j["algorithm"] = m.algorithm;
  j["transport"] = m.transport;
  j["transport_env"] = m.transport_env;
  j["memory"] = memory_name(m.memory);
  j["dtype"] = dtype_name(m.dtype);
  j["op"] = op_name(m.op);
  j["root"] = m.root;
  j["nranks"] = m.nranks;
  j["count"] = m.count;
  j["bytes"] = m.bytes;
  j["in_place"] = m.in_place;
  j["segment_bytes"] = m.segment_bytes;
  j["seed"] = m.seed;
  j["max_scratch_bytes"] = m.max_scratch_bytes;
  if (!m.split.empty()) {
    j["split"] = m.split;
    j["splits"] = m.splits;
  }
  j["iters"] = m.iters;
  j["warmup"] = m.warmup;
  j["path"] = m.path;
  j["wait"] = m.wait;
  j["timing"] = m.timing;
  j["ranks"] = m.ranks;
  j["graph_calls"] = m.graph_calls;
  j["blocking"] = m.blocking;
  j["vendor_call"] = m.vendor_call;
  if (!m.nccl_version.empty()) j["nccl_version"] = m.nccl_version;
}

// The times over the iterations and the bandwidths derived from them.
void put_times(nlohmann::json& j, const Measurement& m) {
  j["time_us"] = m.time_us;
  j["time_us_min"] = m.time_us_min;
  j["time_us_max"] = m.time_us_max;
  j["time_us_p25"] = m.time_us_p25;
  j["time_us_p75"] = m.time_us_p75;
  j["time_spread"] = or_null_if_nan(m.time_spread);
  j["noise_threshold"] = m.noise_threshold;
  j["noisy"] = m.noisy;
  j["round"] = m.round;
  j["gpu_sharing"] = m.gpu_sharing;
  j["mpi_coll_params"] = m.mpi_coll_params;
  j["algbw_gbps"] = m.algbw_gbps;
  j["busbw_gbps"] = m.busbw_gbps;
}

// Each rank's messages, measured (prefix "") or in theory (prefix "theory_").
void put_rank_volumes(nlohmann::json& j, const std::string& prefix, const std::vector<RankVolume>& v) {
  j[prefix + "sent_bytes"] = per_rank(v, [](const RankVolume& r) { return r.sent_bytes; });
  j[prefix + "recv_bytes"] = per_rank(v, [](const RankVolume& r) { return r.recv_bytes; });
  j[prefix + "sent_msgs"] = per_rank(v, [](const RankVolume& r) { return r.sent_msgs; });
  j[prefix + "recv_msgs"] = per_rank(v, [](const RankVolume& r) { return r.recv_msgs; });
}

// Each rank's device copies, measured (prefix "") or in theory (prefix "theory_").
void put_copies(nlohmann::json& j, const std::string& prefix, const std::vector<CopyVolume>& v) {
  j[prefix + "copy_to_host_bytes"] = per_rank(v, [](const CopyVolume& c) { return c.to_host; });
  j[prefix + "copy_to_device_bytes"] = per_rank(v, [](const CopyVolume& c) { return c.to_device; });
  j[prefix + "copy_from_peer_bytes"] = per_rank(v, [](const CopyVolume& c) { return c.from_peer; });
  j[prefix + "reduced_from_peer_bytes"] = per_rank(v, [](const CopyVolume& c) { return c.reduced_from_peer; });
}

// What was sent: per rank, between ranks (the traffic matrices) and between nodes.
void put_volumes(nlohmann::json& j, const Measurement& m) {
  put_rank_volumes(j, "", m.measured);
  put_rank_volumes(j, "theory_", m.theory);
  j["traffic_bytes"] = list_or_null(m.traffic_bytes);
  j["node_of_rank"] = m.node_of_rank;
  std::tie(j["sent_intra_node_bytes"], j["sent_inter_node_bytes"]) = intra_inter(m, m.traffic_bytes);
  j["theory_traffic_bytes"] = list_or_null(m.theory_traffic_bytes);
  std::tie(j["theory_sent_intra_node_bytes"], j["theory_sent_inter_node_bytes"]) =
      intra_inter(m, m.theory_traffic_bytes);
  put_copies(j, "", m.copies);
  put_copies(j, "theory_", m.theory_copies);
}

// The verdicts: volume against theory, the vendor's algorithm, the data check, the model.
void put_verdicts(nlohmann::json& j, const Measurement& m) {
  j["volume"] = volume_status(m);
  j["volume_source"] = m.volume_source;
  j["volume_witness"] = m.volume_witness;
  j["vendor_algorithm"] = m.vendor_algorithm;
  j["vendor_algorithm_closest"] = m.vendor_algorithm_closest;
  j["vendor_algorithm_off_bytes"] = or_null(m.vendor_algorithm_off_bytes);
  j["vendor_algorithm_off_msgs"] = or_null(m.vendor_algorithm_off_msgs);
  j["wrong"] = m.checked ? nlohmann::json(m.wrong) : nlohmann::json(nullptr);
  j["first_bad_rank"] = m.first_bad_rank;
  j["first_bad_index"] = m.first_bad_index;
  j["times_us"] = m.times_us;
  j["predicted_us"] = or_null_if_nan(m.predicted_us);
  j["model"] = m.model;
  j["textbook_sent_bytes"] = or_null_if_nan(m.textbook_sent_bytes);
  j["textbook_formula"] = m.textbook_formula;
}

}  // namespace

nlohmann::json to_json(const Measurement& m) {
  nlohmann::json j;
  put_setup(j, m);
  put_times(j, m);
  put_volumes(j, m);
  if (!m.gpus.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const std::string& g : m.gpus) gpus.push_back(nlohmann::json::parse(g));
    j["gpus"] = gpus;  // the JSON lines only: HDF5 keeps them once per run, in /runs
  }
  put_verdicts(j, m);
  return j;
}

}  // namespace collscope::bench
