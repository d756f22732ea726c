#include "collscope/layers/framework/collective_calls.hpp"

#include <chrono>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "collscope/errors.hpp"
#include "collscope/half.hpp"

namespace collscope::layers {
namespace {

std::vector<bfloat16_t> to_bf16(std::span<const float> t) {
  std::vector<bfloat16_t> out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) out[i] = to_bfloat16(t[i]);
  return out;
}

void from_bf16(const std::vector<bfloat16_t>& in, std::span<float> t) {
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = to_float(in[i]);
}

bool matches(const Fault& f, std::string_view site) {
  return f.kind != Fault::Kind::none && site.find(f.site) != std::string_view::npos;
}

}  // namespace

Fault fault_from_environment() {
  const char* env = std::getenv("COLLSCOPE_DEBUG_LAYER_FAULT");
  if (!env || !*env) return {};
  const std::string text(env);
  const std::size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  Fault f;
  f.site = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "corrupt") f.kind = Fault::Kind::corrupt;
  else if (kind == "nan") f.kind = Fault::Kind::nan;
  else if (kind == "skip") f.kind = Fault::Kind::skip;
  if (f.kind == Fault::Kind::none || colon == std::string::npos)
    throw UsageError("bad COLLSCOPE_DEBUG_LAYER_FAULT '" + text +
                     "' (expected corrupt:SITE, nan:SITE or skip:SITE)");
  return f;
}

CollectiveCalls::CollectiveCalls(AlgorithmChoice algorithms, DataType storage, Fault fault)
    : algorithms_(std::move(algorithms)), storage_(storage), fault_(std::move(fault)) {}

void CollectiveCalls::add_group(std::unique_ptr<GroupComm> group) {
  groups_.push_back(std::move(group));
}

GroupComm& CollectiveCalls::group(GroupKind kind) {
  for (auto& g : groups_)
    if (g->kind() == kind) return *g;
  throw std::logic_error("layer uses a " + std::string(group_name(kind)) +
                         " group it did not ask for");
}

const Algorithm& CollectiveCalls::algorithm(Collective collective) const {
  const auto it = algorithms_.find(collective);
  if (it == algorithms_.end())
    throw std::logic_error("layer calls " + std::string(collective_name(collective)) +
                           ", which it did not declare");
  return *it->second;
}

void CollectiveCalls::start_recording() {
  records_.clear();
  recording_ = true;
}

void CollectiveCalls::run(GroupComm& g, const Algorithm& algo, CollArgs& args) {
  g.traffic().reset();
  const auto t0 = std::chrono::steady_clock::now();
  run_collective(g.comm(), algo, args);
  comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CollectiveCalls::allreduce_sum(GroupKind group, std::string_view site, Tensor& t) {
  allreduce(group, site, t.data, ReduceOp::sum, storage_);
}

void CollectiveCalls::execute(GroupKind group, std::string_view site, Collective collective,
                              CollArgs args, std::span<const float> send, std::span<float> recv,
                              bool in_place) {
  if (!is_storage_dtype(args.dtype))
    throw std::logic_error("layer " + std::string(collective_name(collective)) + " in " +
                           std::string(dtype_name(args.dtype)));
  GroupComm& g = this->group(group);
  const Algorithm& algo = algorithm(collective);
  CallRecord rec{std::string(site), collective, group, args.count, args.dtype,
                 args.op, args.root, {args.splits.begin(), args.splits.end()}, {}};
  if (!(matches(fault_, site) && fault_.kind == Fault::Kind::skip)) {
    const bool bf16 = args.dtype == DataType::bfloat16;
    std::vector<bfloat16_t> send16, recv16;
    if (bf16) {
      recv16 = in_place ? to_bf16(recv) : std::vector<bfloat16_t>(recv.size());
      if (!in_place) send16 = to_bf16(send);
    }
    args.recvbuf = bf16 ? static_cast<void*>(recv16.data()) : recv.data();
    args.sendbuf = in_place ? args.recvbuf
                            : bf16 ? static_cast<const void*>(send16.data()) : send.data();
    run(g, algo, args);
    if (bf16) from_bf16(recv16, recv);
    rec.measured = g.traffic().total();
  }
  inject_fault(g, site, recv, args.dtype);
  if (recording_) records_.push_back(std::move(rec));
}

void CollectiveCalls::allreduce(GroupKind group, std::string_view site, std::span<float> data,
                                ReduceOp op, DataType dtype) {
  CollArgs args;
  args.count = data.size();
  args.dtype = dtype;
  args.op = op;
  execute(group, site, Collective::allreduce, args, {}, data, true);
}

namespace {

CollArgs args_of(std::size_t count, DataType dtype) {
  CollArgs a;
  a.count = count;
  a.dtype = dtype;
  return a;
}

}  // namespace

void CollectiveCalls::allgather(GroupKind group, std::string_view site,
                                std::span<const float> mine, std::span<float> all,
                                std::optional<DataType> dtype) {
  execute(group, site, Collective::allgather, args_of(all.size(), dtype.value_or(storage_)), mine,
          all, false);
}

void CollectiveCalls::reduce_scatter(GroupKind group, std::string_view site,
                                     std::span<const float> full, std::span<float> mine,
                                     ReduceOp op, std::optional<DataType> dtype) {
  CollArgs a = args_of(full.size(), dtype.value_or(storage_));
  a.op = op;
  execute(group, site, Collective::reduce_scatter, a, full, mine, false);
}

void CollectiveCalls::alltoall(GroupKind group, std::string_view site,
                               std::span<const float> send, std::span<float> recv,
                               std::optional<DataType> dtype) {
  const std::size_t n = static_cast<std::size_t>(this->group(group).size());
  if (send.size() % n != 0 || recv.size() != send.size())
    throw std::logic_error(std::string(site) + ": all-to-all buffers are not N equal blocks");
  execute(group, site, Collective::alltoall, args_of(send.size() / n, dtype.value_or(storage_)),
          send, recv, false);
}

void CollectiveCalls::alltoallv(GroupKind group, std::string_view site,
                                std::span<const float> send, std::span<float> recv,
                                std::span<const std::uint64_t> splits,
                                std::optional<DataType> dtype) {
  CollArgs a = args_of(0, dtype.value_or(storage_));
  a.splits = splits;
  execute(group, site, Collective::alltoallv, a, send, recv, false);
}

void CollectiveCalls::broadcast(GroupKind group, std::string_view site, std::span<float> data,
                                int root, std::optional<DataType> dtype) {
  CollArgs a = args_of(data.size(), dtype.value_or(storage_));
  a.root = root;
  execute(group, site, Collective::broadcast, a, {}, data, true);
}

void CollectiveCalls::scatter(GroupKind group, std::string_view site,
                              std::span<const float> full, std::span<float> mine,
                              std::size_t count, int root, std::optional<DataType> dtype) {
  CollArgs a = args_of(count, dtype.value_or(storage_));
  a.root = root;
  execute(group, site, Collective::scatter, a, full, mine, false);
}

void CollectiveCalls::gather(GroupKind group, std::string_view site,
                             std::span<const float> mine, std::span<float> full,
                             std::size_t count, int root, std::optional<DataType> dtype) {
  CollArgs a = args_of(count, dtype.value_or(storage_));
  a.root = root;
  execute(group, site, Collective::gather, a, mine, full, false);
}

void CollectiveCalls::allgather_counts(GroupKind group, std::string_view site,
                                       std::span<const std::int64_t> mine,
                                       std::span<std::int64_t> all) {
  GroupComm& g = this->group(group);
  CollArgs a = args_of(all.size(), DataType::int64);
  CallRecord rec{std::string(site), Collective::allgather, group, a.count, a.dtype, a.op, 0, {}, {}};
  if (!(matches(fault_, site) && fault_.kind == Fault::Kind::skip)) {
    a.sendbuf = mine.data();
    a.recvbuf = all.data();
    run(g, algorithm(Collective::allgather), a);
    rec.measured = g.traffic().total();
  }
  if (recording_) records_.push_back(std::move(rec));
}

void CollectiveCalls::inject_fault(const GroupComm& g, std::string_view site,
                                   std::span<float> data, DataType dtype) const {
  if (!matches(fault_, site) || data.empty() || g.position().position != g.size() - 1) return;
  if (fault_.kind == Fault::Kind::corrupt) data[0] = store_value(data[0] + 1.0f, dtype);
  if (fault_.kind == Fault::Kind::nan) data[0] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace collscope::layers
