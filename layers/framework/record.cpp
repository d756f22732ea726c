#include "collscope/layers/framework/record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collscope/program/spread_fields.hpp"
#include "collscope/program/stats.hpp"
#include "collscope/program/text.hpp"

namespace collscope::layers {
namespace {

using Json = nlohmann::ordered_json;
using program::fmt;
using program::Stats;
using program::stats_of;

// How close a check came to failing: its error over its tolerance (NaN: infinitely).
double closeness(const TensorCheck& c) {
  const double r = c.error.rel_l2_error / c.error.tolerance;
  return std::isnan(r) || !c.error.finite ? INFINITY : r;
}

const TensorCheck* closest_to_failing(const LayerRecord& r) {
  const TensorCheck* worst = nullptr;
  for (const TensorCheck& c : r.checks)
    if (!worst || closeness(c) > closeness(*worst)) worst = &c;
  return worst;
}

// Per world rank, summed over the sites; empty when any site lacks the numbers.
template <class F>
std::vector<std::uint64_t> per_rank_total(const LayerRecord& r, bool theory, F field) {
  std::vector<std::uint64_t> total(static_cast<std::size_t>(r.config.world), 0);
  for (const SiteVolume& s : r.sites) {
    const std::vector<RankVolume>& v = theory ? s.theory : s.measured;
    if (v.empty()) return {};
    for (std::size_t i = 0; i < v.size(); ++i) total[i] += field(v[i]);
  }
  return total;
}

template <class F>
Json per_rank_json(const std::vector<RankVolume>& v, F field) {
  if (v.empty()) return nullptr;
  Json a = Json::array();
  for (const RankVolume& x : v) a.push_back(field(x));
  return a;
}

Json totals_json(const std::vector<std::uint64_t>& v) {
  return v.empty() ? Json(nullptr) : Json(v);
}

std::uint64_t sent(const RankVolume& v) { return v.sent_bytes; }
std::uint64_t recvd(const RankVolume& v) { return v.recv_bytes; }

// The most bytes any rank sends over the whole run: by theory, else as measured.
std::optional<std::uint64_t> busiest_sent(const LayerRecord& r) {
  std::vector<std::uint64_t> t = per_rank_total(r, true, sent);
  if (t.empty()) t = per_rank_total(r, false, sent);
  if (t.empty()) return std::nullopt;
  return *std::max_element(t.begin(), t.end());
}

std::string site_status(const SiteVolume& s) {
  if (s.vendor || s.theory.empty()) return "n/a";
  return s.measured == s.theory ? "ok" : "MISMATCH";
}

std::string volume_status(const LayerRecord& r) {
  if (!r.volume_ok()) return "MISMATCH";
  return r.volume_measured ? "ok" : "n/a";
}

Json check_json(const TensorCheck& c) {
  const ErrorStats& e = c.error;
  return {{"tensor", c.tensor},         {"rel_l2_error", e.rel_l2_error},
          {"max_abs_error", e.max_abs_error}, {"tolerance", e.tolerance},
          {"max_abs_tolerance", e.max_abs_tolerance}, {"reduction_length", e.reduction_length},
          {"finite", e.finite},         {"pass", e.pass}};
}

Json site_json(const SiteVolume& s) {
  Json j;
  j["site"] = s.call.site;
  j["collective"] = collective_name(s.call.collective);
  j["algorithm"] = s.algorithm;
  j["group"] = group_name(s.call.group);
  j["group_size"] = s.group_size;
  j["count"] = s.call.count;
  j["dtype"] = dtype_name(s.dtype);
  j["op"] = op_name(s.call.op);
  j["bytes"] = s.bytes;
  j["sent_bytes"] = per_rank_json(s.measured, sent);
  j["recv_bytes"] = per_rank_json(s.measured, recvd);
  j["theory_sent_bytes"] = per_rank_json(s.theory, sent);
  j["theory_recv_bytes"] = per_rank_json(s.theory, recvd);
  j["closed_form"] = s.closed_form;
  j["closed_form_sent_bytes"] = s.closed_form_bytes ? Json(*s.closed_form_bytes) : nullptr;
  j["volume"] = site_status(s);
  j["time_us"] = s.time_us.empty() ? Json(nullptr) : Json(stats_of(s.time_us).median);
  j["exposed_us"] = s.exposed_us.empty() ? Json(nullptr) : Json(stats_of(s.exposed_us).median);
  return j;
}

Json figure_json(const LayerRecord& r) {
  const TextbookFigure& s = r.textbook_figure;
  const std::optional<std::uint64_t> exact = busiest_sent(r);
  Json j = {{"source", s.source},   {"formula", s.formula},
                      {"elements", s.elements}, {"bytes", s.bytes},
                      {"explanation", s.explanation}};
  j["exact_sent_bytes"] = exact ? Json(*exact) : nullptr;
  j["exact_over_formula"] = exact && s.bytes > 0 ? Json(static_cast<double>(*exact) / s.bytes)
                                              : nullptr;
  return j;
}

void add_identity(Json& j, const LayerRecord& r) {
  j["layer"] = r.layer;
  j["program"] = r.program;
  j["scheme"] = r.scheme;
  j["transport"] = r.transport;
  j["transport_env"] = r.transport_env;
  j["memory"] = r.memory;
  j["path"] = r.path;
  j["wait"] = r.wait;
  j["device_runtime"] = r.device_runtime;
  j["gemm"] = r.gemm;
  j["gpu"] = r.gpu;
  j["overlap"] = r.overlap;
  j["nranks"] = r.config.world;
  j["tp"] = r.config.tp;
  j["cp"] = r.config.cp;
  j["pp"] = r.config.pp;
  j["dp"] = r.config.dp();
  j["ep"] = r.config.ep;
  j["etp"] = r.config.etp;
  j["sp"] = r.sp;
  j["dtype"] = dtype_name(r.storage);
  j["passes"] = r.passes.name();
  j["shape"] = r.shape;
  j["seed"] = r.seed;
  j["algorithms"] = r.algorithms;
  j["iters"] = r.iters;
  j["warmup"] = r.warmup;
}

void add_times(Json& j, const LayerRecord& r) {
  const Stats total = stats_of(r.total_us);
  j["time_us"] = total.median;
  j["time_us_min"] = total.min;
  j["time_us_max"] = total.max;
  program::add_spread_fields(j, total, r.noise_threshold, r.round, r.gpu_sharing);
  j["compute_us"] = stats_of(r.compute_us).median;
  j["comm_us"] = stats_of(r.comm_us).median;
  j["exposed_comm_us"] = stats_of(r.exposed_us).median;
  j["hidden_comm_us"] = stats_of(r.hidden_us).median;
  const double gemm_us = stats_of(r.gemm_us).median;
  j["gemm_us"] = gemm_us;
  j["gemm_flop"] = r.gemm_flop;
  j["gemm_tflops"] = gemm_us > 0 ? Json(r.gemm_flop / gemm_us * 1e-6) : Json(nullptr);
  j["times_us"] = r.total_us;
}

void add_verification(Json& j, const LayerRecord& r) {
  const TensorCheck* worst = closest_to_failing(r);
  j["pass"] = r.passed();
  j["verified"] = r.verified();
  j["rel_l2_error"] = worst ? Json(worst->error.rel_l2_error) : nullptr;
  j["max_abs_error"] = worst ? Json(worst->error.max_abs_error) : nullptr;
  j["tolerance"] = worst ? Json(worst->error.tolerance) : nullptr;
  j["checks"] = Json::array();
  for (const TensorCheck& c : r.checks) j["checks"].push_back(check_json(c));
}

void add_volume(Json& j, const LayerRecord& r) {
  j["sent_bytes"] = totals_json(per_rank_total(r, false, sent));
  j["recv_bytes"] = totals_json(per_rank_total(r, false, recvd));
  j["theory_sent_bytes"] = totals_json(per_rank_total(r, true, sent));
  j["theory_recv_bytes"] = totals_json(per_rank_total(r, true, recvd));
  j["volume"] = volume_status(r);
  j["volume_error"] = r.volume_error;
  j["collectives"] = Json::array();
  for (const SiteVolume& s : r.sites) j["collectives"].push_back(site_json(s));
  j["textbook_figure"] = figure_json(r);
}

// ---- table ------------------------------------------------------------------------------

std::string busiest(const std::vector<RankVolume>& v) {
  if (v.empty()) return "n/a";
  std::uint64_t m = 0;
  for (const RankVolume& x : v) m = std::max(m, x.sent_bytes);
  return std::to_string(m);
}

void print_header(std::ostream& os, const LayerRecord& r) {
  const ParallelConfig& c = r.config;
  os << "# collscope " << r.program << " (" << r.scheme << ")  transport " << r.transport
     << "  nranks " << c.world << "  TP " << c.tp << " CP " << c.cp << " PP " << c.pp << " DP "
     << c.dp() << " EP " << c.ep << " ETP " << c.etp << "  SP " << (r.sp ? "yes" : "no") << "\n";
  os << "# dtype " << dtype_name(r.storage) << "  pass " << r.passes.name() << "  shape";
  for (const auto& [k, v] : r.shape.items()) os << " " << k << " " << v.dump();
  os << "  seed " << r.seed << "  iters " << r.iters << "  warmup " << r.warmup;
  for (const auto& [coll, algo] : r.algorithms) os << "  " << coll << " " << algo;
  os << "\n#\n";
}

void print_sites(std::ostream& os, const LayerRecord& r) {
  os << "# collectives: bytes the busiest rank sent in one call (measured, exact theory, "
        "closed form)\n";
  int width = 32;  // the longest site name
  for (const SiteVolume& s : r.sites) width = std::max(width, static_cast<int>(s.call.site.size()));
  char line[512];
  std::snprintf(line, sizeof line, "# %-*s %-5s %3s %10s %-13s %12s %12s %12s %14s  %-8s %s\n",
                width, "site", "group", "N", "count", "dtype op", "bytes", "sent(B)", "theory(B)",
                "closed(B)", "volume", "closed form");
  os << line;
  for (const SiteVolume& s : r.sites) {
    const std::string closed = s.closed_form_bytes ? fmt("%.1f", *s.closed_form_bytes) : "n/a";
    const std::string type = std::string(dtype_name(s.dtype)) + " " + std::string(op_name(s.call.op));
    std::snprintf(line, sizeof line, "  %-*s %-5s %3d %10zu %-13s %12zu %12s %12s %14s  %-8s %s\n",
                  width, s.call.site.c_str(), std::string(group_name(s.call.group)).c_str(), s.group_size,
                  s.call.count, type.c_str(), s.bytes, busiest(s.measured).c_str(), busiest(s.theory).c_str(),
                  closed.c_str(), site_status(s).c_str(), s.closed_form.c_str());
    os << line;
  }
  if (!r.volume_ok()) os << "#   volume mismatch: " << r.volume_error << "\n";
}

void print_checks(std::ostream& os, const LayerRecord& r) {
  os << "#\n# verification against the float64 unsharded layer\n";
  int width = 8;  // the longest tensor name
  for (const TensorCheck& c : r.checks) width = std::max(width, static_cast<int>(c.tensor.size()));
  char line[512];
  std::snprintf(line, sizeof line, "# %-*s %13s %13s %11s %13s %8s %s\n", width, "tensor", "rel_l2",
                "max_abs", "tolerance", "max_abs_tol", "K", "result");
  os << line;
  for (const TensorCheck& c : r.checks) {
    const ErrorStats& e = c.error;
    std::snprintf(line, sizeof line, "  %-*s %13.3e %13.3e %11.1e %13.3e %8zu %s\n",
                  width, c.tensor.c_str(), e.rel_l2_error, e.max_abs_error, e.tolerance,
                  e.max_abs_tolerance, e.reduction_length, e.pass ? "pass" : "FAIL");
    os << line;
  }
}

void print_site_times(std::ostream& os, const LayerRecord& r) {
  os << "#\n# time per call site (us, slowest rank, median): on its stream, and exposed (no "
        "compute beside it)\n";
  for (const SiteVolume& s : r.sites) {
    if (s.time_us.empty()) continue;
    os << "  " << s.call.site << ": " << fmt("%.2f", stats_of(s.time_us).median) << ", exposed "
       << fmt("%.2f", stats_of(s.exposed_us).median) << "\n";
  }
}

void print_footer(std::ostream& os, const LayerRecord& r) {
  const Stats total = stats_of(r.total_us);
  os << "#\n# time (us, slowest rank, median of " << r.iters << "): total "
     << fmt("%.2f", total.median) << " (min " << fmt("%.2f", total.min) << ", max "
     << fmt("%.2f", total.max) << ")  compute " << fmt("%.2f", stats_of(r.compute_us).median)
     << "  communication " << fmt("%.2f", stats_of(r.comm_us).median) << " (exposed "
     << fmt("%.2f", stats_of(r.exposed_us).median) << ", hidden "
     << fmt("%.2f", stats_of(r.hidden_us).median) << ")\n";
  const double gemm_us = stats_of(r.gemm_us).median;
  os << "# " << r.memory << " memory, path " << r.path << (r.overlap ? ", --overlap" : "")
     << (r.gpu.empty() ? "" : ", " + r.gpu) << "; GEMMs (" << r.gemm << "): "
     << fmt("%.2f", gemm_us) << " us, "
     << (gemm_us > 0 ? fmt("%.3f", r.gemm_flop / gemm_us * 1e-6) : std::string("n/a"))
     << " TFLOP/s\n";
  const TextbookFigure& s = r.textbook_figure;
  const std::optional<std::uint64_t> exact = busiest_sent(r);
  os << "# " << s.source << ": " << s.formula << " = " << fmt("%.0f", s.elements)
     << " elements = " << fmt("%.0f", s.bytes) << " B; exact (busiest rank): "
     << (exact ? std::to_string(*exact) + " B" : "n/a");
  if (exact && s.bytes > 0)
    os << " = " << fmt("%.3f", static_cast<double>(*exact) / s.bytes) << " x the figure";
  os << "\n#   " << s.explanation << "\n";
  os << "# result: " << (r.passed() ? "PASS" : "FAIL") << "  (verification "
     << (r.verified() ? "ok" : "FAILED") << ", volume " << volume_status(r) << ")\n"
     << std::flush;
}

}  // namespace

bool LayerRecord::verified() const {
  if (checks.empty()) return false;
  for (const TensorCheck& c : checks)
    if (!c.error.pass) return false;
  return true;
}

Json to_json(const LayerRecord& r) {
  Json j;
  add_identity(j, r);
  add_times(j, r);
  add_verification(j, r);
  add_volume(j, r);
  return j;
}

void print_table(std::ostream& os, const LayerRecord& r) {
  print_header(os, r);
  print_sites(os, r);
  print_checks(os, r);
  print_site_times(os, r);
  print_footer(os, r);
}

}  // namespace collscope::layers
