// pingpong's record of one size on rank 0 (record.hpp).
#include "record.hpp"

#include <algorithm>
#include <cstdio>

#include "collscope/program/spread_fields.hpp"
#include "collscope/program/text.hpp"
#include "collscope/runtime/p2p.hpp"
#include "collscope/transport_factory.hpp"

namespace collscope::bench::pingpong {
namespace {

using program::fmt;
using program::gbps;
using program::Stats;
using program::stats_of;

std::string describe(const RankVolume& v) {
  return "sent " + std::to_string(v.sent_bytes) + " B/" + std::to_string(v.sent_msgs) +
         " msgs, recv " + std::to_string(v.recv_bytes) + " B/" + std::to_string(v.recv_msgs) +
         " msgs";
}

// Adds one round's or shift's probe to the size's totals, checking it cell by cell
// against its exact traffic (`what` names the step in a mismatch).
void add_step_volume(SizeRecord& s, const std::vector<RankVolume>& measured,
                     const std::vector<RankVolume>& want, const std::string& what) {
  const std::size_t n = static_cast<std::size_t>(s.nranks);
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (measured[i] != want[i] && s.volume_error.empty())
      s.volume_error = what + ": rank " + std::to_string(i / n) + " with rank " +
                       std::to_string(i % n) + " measured " + describe(measured[i]) +
                       "; theory " + describe(want[i]);
    s.traffic[i] += measured[i];
    s.theory[i] += want[i];
  }
}

std::vector<double> times_of(const StepResult& r, int rank, int iters) {
  const auto begin = r.times_us.begin() + static_cast<std::ptrdiff_t>(rank) * iters;
  return {begin, begin + iters};
}

std::vector<RankVolume> per_rank(const std::vector<RankVolume>& matrix, int nranks) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  std::vector<RankVolume> out(n);
  for (std::size_t i = 0; i < matrix.size(); ++i) out[i / n] += matrix[i];
  return out;
}

// Latencies over the pairs (each pair's median), and the slowest pair.
struct PairSummary {
  Stats lat, bw;
  Pair slowest;
  int slowest_rank = -1;  // the highest median latency to its peers
};

int slowest_rank(const std::vector<PairResult>& pairs, int nranks) {
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(nranks));
  for (const PairResult& r : pairs)
    for (int rank : {r.pair.a, r.pair.b}) lat[static_cast<std::size_t>(rank)].push_back(r.lat.median);
  std::vector<double> median;
  for (const auto& l : lat) median.push_back(stats_of(l).median);
  return static_cast<int>(std::max_element(median.begin(), median.end()) - median.begin());
}

PairSummary summarise(const SizeRecord& s) {
  std::vector<double> lat, bw;
  PairSummary out;
  double worst = -1;
  for (const PairResult& r : s.pairs) {
    lat.push_back(r.lat.median);
    bw.push_back(gbps(static_cast<double>(s.bytes), r.lat.median));
    if (r.lat.median > worst) {
      worst = r.lat.median;
      out.slowest = r.pair;
    }
  }
  out.lat = stats_of(lat);
  out.bw = stats_of(bw);
  out.slowest_rank = slowest_rank(s.pairs, s.nranks);
  return out;
}

std::string pair_name(Pair p) { return std::to_string(p.a) + "," + std::to_string(p.b); }

std::string volume_status(const SizeRecord& s) { return s.volume_error.empty() ? "ok" : "MISMATCH"; }

const PairResult* first_bad_pair(const SizeRecord& s) {
  for (const PairResult& r : s.pairs)
    if (r.wrong > 0) return &r;
  return nullptr;
}

std::string wrong_text(const SizeRecord& s) { return s.checked ? std::to_string(s.wrong) : "N/A"; }

// N x N; the diagonal is 0: not measured (self). Symmetric, except for --pattern ring,
// where [a][b] is the link a -> b.
template <class F>
nlohmann::json pair_matrix(const SizeRecord& s, F value) {
  const std::size_t n = static_cast<std::size_t>(s.nranks);
  std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
  for (const PairResult& r : s.pairs) {
    const auto a = static_cast<std::size_t>(r.pair.a), b = static_cast<std::size_t>(r.pair.b);
    m[a][b] = value(r);
    if (s.pattern != Pattern::ring) m[b][a] = m[a][b];
  }
  return m;
}

template <class F>
nlohmann::json per_rank_field(const std::vector<RankVolume>& matrix, int nranks, F field) {
  nlohmann::json a = nlohmann::json::array();
  for (const RankVolume& v : per_rank(matrix, nranks)) a.push_back(field(v));
  return a;
}

void add_volumes(nlohmann::json& j, const SizeRecord& s) {
  const auto sb = [](const RankVolume& v) { return v.sent_bytes; };
  const auto rb = [](const RankVolume& v) { return v.recv_bytes; };
  const auto sm = [](const RankVolume& v) { return v.sent_msgs; };
  const auto rm = [](const RankVolume& v) { return v.recv_msgs; };
  j["sent_bytes"] = per_rank_field(s.traffic, s.nranks, sb);
  j["recv_bytes"] = per_rank_field(s.traffic, s.nranks, rb);
  j["sent_msgs"] = per_rank_field(s.traffic, s.nranks, sm);
  j["recv_msgs"] = per_rank_field(s.traffic, s.nranks, rm);
  j["theory_sent_bytes"] = per_rank_field(s.theory, s.nranks, sb);
  j["theory_recv_bytes"] = per_rank_field(s.theory, s.nranks, rb);
  j["theory_sent_msgs"] = per_rank_field(s.theory, s.nranks, sm);
  j["theory_recv_msgs"] = per_rank_field(s.theory, s.nranks, rm);
  std::vector<std::uint64_t> traffic;
  for (const RankVolume& v : s.traffic) traffic.push_back(v.sent_bytes);
  j["traffic_bytes"] = traffic;
  j["volume"] = volume_status(s);
  j["wrong"] = s.checked ? nlohmann::json(s.wrong) : nlohmann::json(nullptr);
  const PairResult* bad = first_bad_pair(s);
  j["first_bad_pair"] = bad ? nlohmann::json{bad->pair.a, bad->pair.b} : nlohmann::json(nullptr);
}

// The step's exact N x N volume: the catalogue's theory of the pattern.
std::vector<RankVolume> theory_of(const SizeRecord& s, const P2pStep& step) {
  return p2p_entry(s.pattern).theory(step, s.bytes, s.nranks);
}

// A round: each pair's time is its first rank's half round trip (as for one pair).
void add_round_pairs(SizeRecord& s, const P2pStep& round, const StepResult& r, int iters) {
  for (Pair p : round.pairs) {
    PairResult pr{p, times_of(r, p.a, iters), {}, r.wrong[static_cast<std::size_t>(p.a)] +
                  r.wrong[static_cast<std::size_t>(p.b)], {}};
    pr.lat = stats_of(pr.half_rtt_us);
    s.wrong += pr.wrong;
    s.pairs.push_back(std::move(pr));
  }
}

// A shift: link a -> a+k is timed by the call of its receiver a+k, which ends once the
// message has arrived (and its own send is done). The sender's call would not do: a
// send completes when the transport has taken the bytes (TCP: into the socket buffer),
// long before they arrive over a slow link.
void add_links(SizeRecord& s, int k, const StepResult& r, int iters) {
  for (int a = 0; a < s.nranks; ++a) {
    const int b = (a + k) % s.nranks;
    PairResult pr{{a, b}, times_of(r, b, iters), {}, r.wrong[static_cast<std::size_t>(b)], {}};
    pr.lat = stats_of(pr.half_rtt_us);
    s.wrong += pr.wrong;
    s.pairs.push_back(std::move(pr));
  }
}

// The times of one pair (their iterations), or of every pair (their medians).
void add_times(nlohmann::json& j, const SizeRecord& s, const Options& o, const std::string& gpu_sharing) {
  if (!s.all_pairs) {
    const PairResult& r = s.pairs.front();
    j["pair"] = {r.pair.a, r.pair.b};
    j["time_us"] = r.lat.median;
    j["time_us_min"] = r.lat.min;
    j["time_us_max"] = r.lat.max;
    program::add_spread_fields(j, r.lat, o.noise_threshold, o.round, gpu_sharing);
    j["times_us"] = r.half_rtt_us;
    return;
  }
  const PairSummary m = summarise(s);
  j["pair"] = nullptr;
  j["pairs"] = "all";
  j["time_us"] = m.lat.median;
  j["time_us_min"] = m.lat.min;
  j["time_us_max"] = m.lat.max;
  program::add_spread_fields(j, m.lat, o.noise_threshold, o.round, gpu_sharing);
  j["slowest_pair"] = {m.slowest.a, m.slowest.b};
  j["slowest_rank"] = m.slowest_rank;
  j["latency_us_matrix"] = pair_matrix(s, [](const PairResult& r) { return r.lat.median; });
  j["bw_gbps_matrix"] =
      pair_matrix(s, [&s](const PairResult& r) { return gbps(static_cast<double>(s.bytes), r.lat.median); });
}

}  // namespace

void add_pair(SizeRecord& s, const P2pStep& step, PairResult r) {
  add_step_volume(s, r.traffic, theory_of(s, step), "pair " + pair_name(r.pair));
  s.wrong += r.wrong;
  s.pairs.push_back(std::move(r));
}

void add_step(SizeRecord& s, const P2pStep& step, const StepResult& r, int iters, int index) {
  if (s.pattern == Pattern::ring) {
    add_step_volume(s, r.traffic, theory_of(s, step), "ring shift " + std::to_string(step.shift));
    add_links(s, step.shift, r, iters);
  } else {
    add_step_volume(s, r.traffic, theory_of(s, step), "round " + std::to_string(index));
    add_round_pairs(s, step, r, iters);
  }
}

void print_header(std::ostream& os, const PingpongOptions& p, int nranks,
                  const std::vector<std::string>& warnings) {
  const Options& o = p.common;
  os << "# collscope pingpong  transport " << transport_name(o.transport) << "  nranks " << nranks << "  pairs "
     << (p.all_pairs ? "all" : pair_name(p.pair)) << "  pattern " << pattern_name(p.pattern)
     << "  iters " << o.iters << "  warmup "
     << o.warmup << "  check " << (o.check ? 1 : 0) << "\n";
  for (const std::string& e : transport_environment(o.transport)) os << "# " << e << "\n";
  for (const std::string& w : warnings) os << "# warning: " << w << "\n";
  char line[256];
  if (!p.all_pairs) {
    os << "# lat: half the round trip, timed on the pair's first rank (median, min, max over "
          "iterations); bw = size / lat; GB = 1e9 B\n#\n";
    std::snprintf(line, sizeof line, "# %12s %7s %6s %10s %10s %10s %9s %7s %8s\n", "size(B)",
                  "pair", "iters", "lat(us)", "min(us)", "max(us)", "bw(GB/s)", "#wrong", "volume");
  } else {
    os << (p.pattern == Pattern::ring
               ? "# per link a -> b: lat = median time of b's call (receive from a, send on), "
               : "# per pair: lat = median half round trip, ")
       << "bw = size / lat; min, median, max over pairs; slowest: pair with the highest lat, "
          "rank with the highest median lat\n#\n";
    std::snprintf(line, sizeof line, "# %12s %5s %6s %10s %10s %10s %9s %9s %9s %7s %5s %7s %8s\n",
                  "size(B)", "pairs", "iters", "lat_min", "lat_med", "lat_max", "bw_min", "bw_med",
                  "bw_max", "slowest", "rank", "#wrong", "volume");
  }
  os << line << std::flush;
}

void print_row(std::ostream& os, const SizeRecord& s, int iters) {
  char line[320];
  if (!s.all_pairs) {
    const PairResult& r = s.pairs.front();
    std::snprintf(line, sizeof line, "  %12zu %7s %6d %10s %10s %10s %9s %7s %8s\n", s.bytes,
                  pair_name(r.pair).c_str(), iters, fmt("%.2f", r.lat.median).c_str(),
                  fmt("%.2f", r.lat.min).c_str(), fmt("%.2f", r.lat.max).c_str(),
                  fmt("%.3f", gbps(static_cast<double>(s.bytes), r.lat.median)).c_str(), wrong_text(s).c_str(),
                  volume_status(s).c_str());
  } else {
    const PairSummary m = summarise(s);
    std::snprintf(line, sizeof line, "  %12zu %5zu %6d %10s %10s %10s %9s %9s %9s %7s %5d %7s %8s\n",
                  s.bytes, s.pairs.size(), iters, fmt("%.2f", m.lat.min).c_str(),
                  fmt("%.2f", m.lat.median).c_str(), fmt("%.2f", m.lat.max).c_str(),
                  fmt("%.3f", m.bw.min).c_str(), fmt("%.3f", m.bw.median).c_str(),
                  fmt("%.3f", m.bw.max).c_str(), pair_name(m.slowest).c_str(), m.slowest_rank,
                  wrong_text(s).c_str(), volume_status(s).c_str());
  }
  os << line;
  if (const PairResult* bad = first_bad_pair(s))
    os << "#   pair " << pair_name(bad->pair) << ": " << bad->wrong
       << " bytes arrived changed (counted at each receiver)\n";
  if (!s.volume_error.empty()) os << "#   volume mismatch: " << s.volume_error << "\n";
  os << std::flush;
}

nlohmann::json to_json(const SizeRecord& s, const PingpongOptions& p, const std::vector<int>& nodes,
                       const std::string& gpu_sharing) {
  nlohmann::json j;
  j["collective"] = "pingpong";
  j["algorithm"] = s.pattern == Pattern::pairs ? std::string_view("pingpong") : pattern_name(s.pattern);
  j["transport"] = transport_name(p.common.transport);
  j["transport_env"] = transport_environment(p.common.transport);
  j["memory"] = memory_name(p.common.memory);
  j["nranks"] = s.nranks;
  j["bytes"] = s.bytes;
  j["iters"] = p.common.iters;
  j["warmup"] = p.common.warmup;
  add_times(j, s, p.common, gpu_sharing);
  j["algbw_gbps"] = gbps(static_cast<double>(s.bytes), j["time_us"].get<double>());
  j["busbw_gbps"] = j["algbw_gbps"];
  add_volumes(j, s);
  j["node_of_rank"] = nodes;
  return j;
}

}  // namespace collscope::bench::pingpong
