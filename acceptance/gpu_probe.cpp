// gpu_probe: each rank's GPU, its memory and its PCIe link, one rank at a time
// (scripts/accept --memory device, acceptance/README.md "GPU nodes").
//
// Every rank says whether it has device memory (device::unavailable_reason) and which GPU
// it uses (the benchmarks' choice: local rank modulo the node's GPUs): its CUDA index,
// name, UUID and PCI bus id. With --identify that is all. Otherwise the ranks of --ranks
// (all by default) measure what collscope_device_rate measures at -b, and the PCIe link,
// one rank at a time while the others wait in a barrier that sleeps, in turns of one call
// (the first call of each rank in --ranks order, then the second, ...: ranks measured
// side by side meet the same load of a shared machine):
//
//   d2d     the copy engine's device-to-device copy of B bytes (GB/s of bytes copied)
//   reduce  the reduce kernel, float sum out = a + b, three distinct buffers of B bytes
//           (GB/s of output)
//   h2d     a pinned host-to-device copy of P bytes (--pcie-bytes)
//   d2h     a pinned device-to-host copy of P bytes
//   bidir   both at once on two streams (GB/s of both directions together)
//   pcie    the link's generation and width now and at most (NVML), read while an
//           untimed copy each way keeps it busy (an idle link runs slower to save power)
//
// Each figure: -w untimed then -n timed calls, each timed on the GPU by two timing events
// around the work of its streams, so the figure is the device's and holds none of the
// host's launch and wake-up (by the host's clock, four ranks on one H200 read a 1 GiB
// copy at 1618-1633 GB/s, 22% below collscope_device_rate alone; by events, 2099).
// The results are checked (the sum, the copies there and back).
// Each measuring rank holds its buffers (3 x B on the device, 2 x P more, 3 x P pinned)
// from the start to the end.
// Rank 0 prints one JSON line:
//
//   {"probe": "gpu", "nranks", "hosts", "available", "unavailable", "runtime", "gpus"
//    (per rank), "bytes", "pcie_bytes", "iters", "warmup", "order",
//    "ranks": [per rank: {"d2d": [GB/s per call], "reduce", "h2d", "d2h", "bidir",
//              "pcie": {"known", "why", "generation", "max_generation", "width",
//                       "max_width"}, "wrong": failed checks} or null where not measured]}
//
// COLLSCOPE_DEVICE_SLOWDOWN (collectives/device/slowdown.hpp) slows one rank's copies.
// Exit status: 0; 1 a wrong result; 2 usage or no device memory (one line); 3 runtime.
#include <CLI/CLI.hpp>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "collscope/agree.hpp"
#include "collscope/runtime/backend.hpp"
#include "collscope/bench/options.hpp"
#include "collscope/device/runtime.hpp"
#include "collscope/errors.hpp"
#include "collscope/program/mpi_program.hpp"
#include "collscope/program/quiet_barrier.hpp"
#include "pcie_link.hpp"
#include "probe_turns.hpp"

namespace collscope::acceptance {
namespace {

using nlohmann::json;
constexpr const char* kProgram = "gpu_probe";
constexpr std::size_t kCheckBytes = std::size_t{1} << 20;  // of the sum, read back

struct ProbeOptions {
  std::size_t bytes = std::size_t{1} << 30;
  std::size_t pcie_bytes = std::size_t{256} << 20;
  int iters = 10, warmup = 2;
  std::vector<int> ranks;  // empty: all, in rank order
  bool identify = false;
  bool show_help = false;
  std::string help_text;
};

std::vector<int> parse_ranks(const std::string& text, int nranks) {
  std::vector<int> out;
  if (text == "all") {
    for (int r = 0; r < nranks; ++r) out.push_back(r);
    return out;
  }
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 7 ||
        std::stoi(item) >= nranks)
      throw UsageError("bad --ranks '" + text + "' (expected all, or ranks below " +
                       std::to_string(nranks) + " such as 2,0)");
    const int r = std::stoi(item);
    if (std::find(out.begin(), out.end(), r) != out.end())
      throw UsageError("--ranks names rank " + item + " twice");
    out.push_back(r);
  }
  if (out.empty()) throw UsageError("--ranks names no rank");
  return out;
}

ProbeOptions parse_options(int argc, const char* const* argv, int nranks) {
  ProbeOptions o;
  CLI::App app{"collscope gpu_probe: each rank's GPU memory and PCIe link, one rank at a time",
               kProgram};
  std::string bytes = "1G", pcie_bytes = "256M", ranks = "all";
  app.add_option("-b,--bytes", bytes, "bytes of each buffer of the copy and the reduction (1G)");
  app.add_option("--pcie-bytes", pcie_bytes, "bytes of each host-device copy (256M)");
  app.add_option("-n,--iters", o.iters, "timed calls per figure (10)");
  app.add_option("-w,--warmup", o.warmup, "untimed calls per figure (2)");
  app.add_option("--ranks", ranks, "the ranks that measure, in this order (all)");
  app.add_flag("--identify", o.identify, "only say which GPU each rank uses");
  app.set_help_flag("-h,--help", "print this help and exit");
  if (!program::parse_command_line(app, argc, argv, o.help_text)) {
    o.show_help = true;
    return o;
  }
  o.bytes = bench::parse_size(bytes, "--bytes");
  o.pcie_bytes = bench::parse_size(pcie_bytes, "--pcie-bytes");
  if (o.bytes < kCheckBytes) throw UsageError("--bytes must be at least 1M");
  if (o.pcie_bytes < 4096) throw UsageError("--pcie-bytes must be at least 4K");
  if (o.iters < 1) throw UsageError("--iters must be at least 1");
  if (o.warmup < 0) throw UsageError("--warmup must not be negative");
  o.ranks = parse_ranks(ranks, nranks);
  return o;
}

// ---- gathering every rank's JSON on rank 0 ------------------------------------------------

std::vector<json> gather_json(MPI_Comm comm, const json& mine, int rank, int nranks) {
  const std::string text = mine.dump();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(nranks)), offsets(lengths.size());
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = total, total += lengths[r];
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
              comm);
  std::vector<json> out;
  if (rank != 0) return out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.push_back(json::parse(all.begin() + offsets[r], all.begin() + offsets[r] + lengths[r]));
  return out;
}

// ---- the measurements ---------------------------------------------------------------------

// Page-locked host memory that frees itself.
class Pinned {
 public:
  Pinned(device::Runtime& rt, std::size_t bytes)
      : rt_(rt), p_(static_cast<unsigned char*>(rt.alloc_pinned(bytes))) {}
  ~Pinned() { rt_.free_pinned(p_); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  unsigned char* get() const { return p_; }

 private:
  device::Runtime& rt_;
  unsigned char* p_;
};

// One measuring rank's buffers and the calls of each figure (each to the end of its
// streams), and the checks of their results.
class Calls {
 public:
  Calls(device::Runtime& rt, const ProbeOptions& o)
      : rt_(rt), bytes_(o.bytes), pcie_(o.pcie_bytes), s_(rt.create_stream()), second_(rt.create_stream()),
        a_(rt, bytes_), b_(rt, bytes_), sum_(rt, bytes_), dev_(rt, pcie_), other_(rt, pcie_),
        up_(rt, pcie_), down_(rt, pcie_), back_(rt, pcie_) {
    rt_.memset(a_.get(), 0x3f, bytes_, s_);  // every float 0x3f3f3f3f; doubling it is exact
    rt_.memset(b_.get(), 0x3f, bytes_, s_);
    rt_.memset(other_.get(), 0, pcie_, s_);
    for (std::size_t i = 0; i < pcie_; ++i) up_.get()[i] = static_cast<unsigned char>(i % 251);
    rt_.synchronize(s_);
  }
  ~Calls() {
    for (device::Event e : {start_, joined_, stop_}) rt_.destroy_event(e);
    rt_.destroy_stream(s_);
    rt_.destroy_stream(second_);
  }
  Calls(const Calls&) = delete;
  Calls& operator=(const Calls&) = delete;

  // The bytes one call of `figure` moves, and the call.
  std::size_t bytes(const std::string& figure) const {
    return figure == "d2d" || figure == "reduce" ? bytes_ : figure == "bidir" ? 2 * pcie_ : pcie_;
  }
  // Seconds one call of `figure` takes on the GPU: from an event before it on the first
  // stream to one after both streams' work (bidir's second stream starts and ends with it).
  double timed_call(const std::string& figure) {
    rt_.record(start_, s_);
    rt_.wait(second_, start_);
    enqueue(figure);
    rt_.record(joined_, second_);
    rt_.wait(s_, joined_);
    rt_.record(stop_, s_);
    rt_.synchronize(s_);
    return rt_.elapsed_ms(start_, stop_) / 1e3;
  }
  void call(const std::string& figure) {
    enqueue(figure);
    rt_.synchronize(s_);
    rt_.synchronize(second_);
  }
  void enqueue(const std::string& figure) {
    if (figure == "d2d") rt_.copy(sum_.get(), a_.get(), bytes_, device::CopyKind::device_to_device, s_);
    if (figure == "reduce")
      rt_.reduce(sum_.get(), a_.get(), b_.get(), bytes_ / sizeof(float), DataType::float32, ReduceOp::sum, s_);
    if (figure == "h2d" || figure == "bidir")
      rt_.copy(dev_.get(), up_.get(), pcie_, device::CopyKind::host_to_device, s_);
    if (figure == "d2h") rt_.copy(back_.get(), dev_.get(), pcie_, device::CopyKind::device_to_host, s_);
    if (figure == "bidir") rt_.copy(down_.get(), other_.get(), pcie_, device::CopyKind::device_to_host, second_);
  }
  // The PCIe link as the driver reports it while an untimed copy each way keeps it busy.
  json link(const std::string& uuid) {
    rt_.copy(dev_.get(), up_.get(), pcie_, device::CopyKind::host_to_device, s_);
    rt_.copy(down_.get(), other_.get(), pcie_, device::CopyKind::device_to_host, second_);
    const PcieLink l = rt_.emulated() ? PcieLink{} : read_pcie_link(uuid);
    rt_.synchronize(s_);
    rt_.synchronize(second_);
    if (rt_.emulated()) return {{"known", false}, {"why", "the emulated device has no PCIe link"}};
    if (!l.known) return {{"known", false}, {"why", l.why}};
    return {{"known", true}, {"generation", l.generation}, {"max_generation", l.max_generation},
            {"width", l.width}, {"max_width", l.max_width}};
  }
  // Failed checks: the sum's first bytes read back, and the last copy there and back.
  std::uint64_t wrong() {
    std::vector<float> host(kCheckBytes / sizeof(float));
    rt_.copy(host.data(), sum_.get(), kCheckBytes, device::CopyKind::device_to_host, s_);
    call("h2d");
    call("d2h");
    float x;
    const std::uint32_t bits = 0x3f3f3f3fu;
    std::memcpy(&x, &bits, sizeof x);
    std::uint64_t bad = 0;
    for (float v : host) bad += v != x + x;
    return bad + (std::memcmp(up_.get(), back_.get(), pcie_) != 0);
  }

 private:
  device::Runtime& rt_;
  std::size_t bytes_, pcie_;
  device::Stream s_, second_;
  device::Event start_ = rt_.create_event(true), joined_ = rt_.create_event(true), stop_ = rt_.create_event(true);
  device::Buffer a_, b_, sum_, dev_, other_;
  Pinned up_, down_, back_;
};

const char* const kFigures[] = {"d2d", "reduce", "h2d", "d2h", "bidir"};

// Every figure of the ranks of --ranks, in turns of one call: the first call of each rank
// in --ranks order, then the second, ..., the others waiting in a barrier that sleeps.
// So each rank is measured alone, and ranks measured side by side meet the same load of
// their machine (a shared machine's load changes over seconds, not between two calls).
// Collective over comm; `calls` is null on ranks that do not measure.
json measure_in_turns(MPI_Comm comm, int rank, const ProbeOptions& o, Calls* calls,
                      const std::string& uuid) {
  json out;
  take_turns(comm, rank, o.ranks, [&] { out["pcie"] = calls->link(uuid); });
  for (const char* figure : kFigures) {
    std::vector<double> gbps;
    for (int i = 0; i < o.warmup + o.iters; ++i) {
      take_turns(comm, rank, o.ranks, [&] {
        const double s = calls->timed_call(figure);
        if (i >= o.warmup) gbps.push_back(s > 0 ? static_cast<double>(calls->bytes(figure)) / s / 1e9 : 0.0);
      });
    }
    if (calls) out[figure] = gbps;
  }
  if (calls) out["wrong"] = calls->wrong();
  return calls ? out : json();
}

json gpu_json(const device::Info& i) {
  return {{"index", i.index}, {"name", i.name}, {"uuid", i.uuid}, {"pci_bus_id", i.pci_bus_id},
          {"memory_bytes", i.memory_bytes}, {"emulated", i.emulated}};
}

// ---- the program -----------------------------------------------------------------------------

json column(const std::vector<json>& idents, const char* key) {
  json out = json::array();
  for (const json& id : idents) out.push_back(id.value(key, json()));
  return out;
}

json header(const ProbeOptions& o, int nranks, const std::vector<json>& idents) {
  return {{"probe", "gpu"}, {"nranks", nranks}, {"hosts", column(idents, "host")},
          {"available", column(idents, "available")}, {"unavailable", column(idents, "unavailable")},
          {"runtime", column(idents, "runtime")}, {"gpus", column(idents, "gpu")},
          {"bytes", o.bytes}, {"pcie_bytes", o.pcie_bytes}, {"iters", o.iters}, {"warmup", o.warmup},
          {"order", o.identify ? std::vector<int>{} : o.ranks}};
}

int main_on_all_ranks(int argc, char** argv, int rank, int nranks) {
  const ProbeOptions o = parse_options(argc, argv, nranks);
  if (o.show_help) {
    if (rank == 0) std::cout << o.help_text;
    return kExitOk;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const std::string why = device::unavailable_reason();
  json ident{{"host", host_name()}, {"available", why.empty()}, {"unavailable", why}};
  int all_have = why.empty() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_have, 1, MPI_INT, MPI_MIN, comm);
  if (!all_have && !o.identify) agree_or_throw(comm, why);  // no device memory: exit 2
  device::Runtime* rt = nullptr;
  if (all_have) {
    rt = &device::runtime();
    choose_device(*rt, {}, comm);
    ident["gpu"] = gpu_json(rt->info());
    ident["runtime"] = rt->kind();
  }
  json mine;  // null where this rank does not measure
  if (!o.identify) {
    const bool measures = std::find(o.ranks.begin(), o.ranks.end(), rank) != o.ranks.end();
    std::unique_ptr<Calls> calls = measures ? std::make_unique<Calls>(*rt, o) : nullptr;
    mine = measure_in_turns(comm, rank, o, calls.get(), ident["gpu"]["uuid"].get<std::string>());
  }
  const std::vector<json> idents = gather_json(comm, ident, rank, nranks);
  const std::vector<json> results = gather_json(comm, mine, rank, nranks);
  MPI_Comm_free(&comm);
  if (rank != 0) return kExitOk;  // rank 0's code is every rank's (probe_main)
  json record = header(o, nranks, idents);
  record["ranks"] = results;
  const bool any_wrong = std::any_of(results.begin(), results.end(), [](const json& r) {
    return r.is_object() && r.value("wrong", 0) > 0;
  });
  return print_record(record, any_wrong);
}

}  // namespace
}  // namespace collscope::acceptance

int main(int argc, char** argv) {
  return collscope::acceptance::probe_main(collscope::acceptance::kProgram, argc, argv,
                                           collscope::acceptance::main_on_all_ranks);
}
