#include "collscope/layers/collective_calls.hpp"

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

CollectiveCalls::CollectiveCalls(std::map<std::string, const Algorithm*, std::less<>> algorithms,
                                 DataType storage, Fault fault)
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

const Algorithm& CollectiveCalls::algorithm(std::string_view collective) const {
  const auto it = algorithms_.find(collective);
  if (it == algorithms_.end())
    throw std::logic_error("layer calls " + std::string(collective) + ", which it did not declare");
  return *it->second;
}

void CollectiveCalls::start_recording() {
  records_.clear();
  recording_ = true;
}

void CollectiveCalls::run(GroupComm& g, const Algorithm& algo, CollArgs& args) {
  g.counter().reset();
  const auto t0 = std::chrono::steady_clock::now();
  run_collective(g.comm(), algo, args);
  comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CollectiveCalls::allreduce_sum(GroupKind group, std::string_view site, Tensor& t) {
  allreduce(group, site, t.data, ReduceOp::sum, storage_);
}

void CollectiveCalls::allreduce(GroupKind group, std::string_view site, std::span<float> data,
                                ReduceOp op, DataType dtype) {
  if (!is_storage_dtype(dtype))
    throw std::logic_error("layer allreduce in " + std::string(dtype_name(dtype)));
  GroupComm& g = this->group(group);
  const Algorithm& algo = algorithm("allreduce");
  CallRecord rec{std::string(site), "allreduce", group, data.size(), dtype, op, {}};
  if (!(matches(fault_, site) && fault_.kind == Fault::Kind::skip)) {
    CollArgs args;
    args.count = data.size();
    args.dtype = dtype;
    args.op = op;
    std::vector<bfloat16_t> packed;
    if (dtype == DataType::bfloat16) packed = to_bf16(data);
    void* buf = dtype == DataType::bfloat16 ? static_cast<void*>(packed.data()) : data.data();
    args.sendbuf = args.recvbuf = buf;  // in place
    run(g, algo, args);
    if (dtype == DataType::bfloat16) from_bf16(packed, data);
    rec.measured = g.counter().total();
  }
  inject_fault(g, site, data, dtype);
  if (recording_) records_.push_back(std::move(rec));
}

void CollectiveCalls::inject_fault(const GroupComm& g, std::string_view site,
                                   std::span<float> data, DataType dtype) const {
  if (!matches(fault_, site) || data.empty() || g.position().position != g.size() - 1) return;
  if (fault_.kind == Fault::Kind::corrupt) data[0] = store_value(data[0] + 1.0f, dtype);
  if (fault_.kind == Fault::Kind::nan) data[0] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace collscope::layers
