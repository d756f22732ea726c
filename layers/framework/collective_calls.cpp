#include "collscope/layers/framework/collective_calls.hpp"

#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "collscope/errors.hpp"
#include "collscope/half.hpp"
#include "collscope/layers/math/tensor.hpp"

namespace collscope::layers {
namespace {

bool matches(const Fault& f, std::string_view site) {
  return f.kind != Fault::Kind::none && site.find(f.site) != std::string_view::npos;
}

void check_dtypes(const Array& a, const Array& b, std::string_view site) {
  if (a.dtype() != b.dtype())
    throw std::logic_error(std::string(site) + ": send and receive arrays differ in dtype");
}

CollArgs args_of(std::size_t count, DataType dtype) {
  CollArgs a;
  a.count = count;
  a.dtype = dtype;
  return a;
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

CollectiveCalls::CollectiveCalls(AlgorithmChoice algorithms, Engine& engine, Fault fault,
                                 bool overlap)
    : algorithms_(std::move(algorithms)), engine_(engine), fault_(std::move(fault)),
      overlap_(overlap), timeline_(engine) {}

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

Ticket CollectiveCalls::execute(GroupKind group, std::string_view site, Collective collective,
                                CollArgs args, const void* send, Array& result, bool in_place,
                                Join join) {
  if (collective != Collective::allgather || args.dtype != DataType::int64)
    if (!is_storage_dtype(args.dtype))
      throw std::logic_error("layer " + std::string(collective_name(collective)) + " in " +
                             std::string(dtype_name(args.dtype)));
  GroupComm& g = this->group(group);
  const Algorithm& algo = algorithm(collective);
  CallRecord rec{std::string(site), collective, group, args.count, args.dtype,
                 args.op, args.root, {args.splits.begin(), args.splits.end()}, {}};
  Ticket ticket;
  if (!(matches(fault_, site) && fault_.kind == Fault::Kind::skip)) {
    const Engine::Stream s = g.stream();
    engine_.wait(s, timeline_.pause());  // after the compute that made the buffers
    timeline_.comm_start(s);
    args.recvbuf = result.data();
    args.sendbuf = in_place ? result.data() : send;
    g.traffic().reset();
    run_collective(g.comm(), algo, args);
    rec.measured = g.traffic().total();
    ends_.push_back(timeline_.comm_end(s));
    joined_.push_back(false);
    timeline_.resume();
    ticket.index = ends_.size() - 1;
    if (join == Join::now || !overlap_ || matches(fault_, site)) this->join(ticket);
  }
  inject_fault(g, site, result);
  if (recording_) records_.push_back(std::move(rec));
  return ticket;
}

void CollectiveCalls::join(Ticket t) {
  if (t.index >= ends_.size() || joined_[t.index]) return;
  timeline_.pause();
  engine_.wait(engine_.stream(), ends_[t.index]);
  timeline_.resume();
  joined_[t.index] = true;
}

void CollectiveCalls::join_all() {
  for (std::size_t i = 0; i < ends_.size(); ++i) join(Ticket{i});
  ends_.clear();
  joined_.clear();
}

void CollectiveCalls::release_freed_buffers() {
  for (auto& g : groups_) g->release_freed_buffers();
}

Ticket CollectiveCalls::allreduce(GroupKind group, std::string_view site, Array& data,
                                  ReduceOp op, Join join) {
  CollArgs a = args_of(data.size(), data.dtype());
  a.op = op;
  return execute(group, site, Collective::allreduce, a, nullptr, data, true, join);
}

Ticket CollectiveCalls::allgather(GroupKind group, std::string_view site, const Array& mine,
                                  Array& all, Join join) {
  check_dtypes(mine, all, site);
  return execute(group, site, Collective::allgather, args_of(all.size(), all.dtype()),
                 mine.data(), all, false, join);
}

Ticket CollectiveCalls::reduce_scatter(GroupKind group, std::string_view site, const Array& full,
                                       Array& mine, ReduceOp op, Join join) {
  check_dtypes(full, mine, site);
  CollArgs a = args_of(full.size(), full.dtype());
  a.op = op;
  return execute(group, site, Collective::reduce_scatter, a, full.data(), mine, false, join);
}

Ticket CollectiveCalls::alltoall(GroupKind group, std::string_view site, const Array& send,
                                 Array& recv, Join join) {
  check_dtypes(send, recv, site);
  const std::size_t n = static_cast<std::size_t>(this->group(group).size());
  if (send.size() % n != 0 || recv.size() != send.size())
    throw std::logic_error(std::string(site) + ": all-to-all buffers are not N equal blocks");
  return execute(group, site, Collective::alltoall, args_of(send.size() / n, send.dtype()),
                 send.data(), recv, false, join);
}

Ticket CollectiveCalls::alltoallv(GroupKind group, std::string_view site, const Array& send,
                                  Array& recv, std::span<const std::uint64_t> splits, Join join) {
  check_dtypes(send, recv, site);
  CollArgs a = args_of(0, send.dtype());
  a.splits = splits;
  return execute(group, site, Collective::alltoallv, a, send.data(), recv, false, join);
}

Ticket CollectiveCalls::broadcast(GroupKind group, std::string_view site, Array& data, int root,
                                  Join join) {
  CollArgs a = args_of(data.size(), data.dtype());
  a.root = root;
  return execute(group, site, Collective::broadcast, a, nullptr, data, true, join);
}

Ticket CollectiveCalls::scatter(GroupKind group, std::string_view site, const Array& full,
                                Array& mine, std::size_t count, int root, Join join) {
  CollArgs a = args_of(count, mine.dtype());
  a.root = root;
  return execute(group, site, Collective::scatter, a, full.data(), mine, false, join);
}

Ticket CollectiveCalls::gather(GroupKind group, std::string_view site, const Array& mine,
                               Array& full, std::size_t count, int root, Join join) {
  CollArgs a = args_of(count, mine.dtype());
  a.root = root;
  return execute(group, site, Collective::gather, a, mine.data(), full, false, join);
}

void CollectiveCalls::allgather_counts(GroupKind group, std::string_view site, const Array& mine,
                                       Array& all) {
  if (mine.dtype() != DataType::int64 || all.dtype() != DataType::int64)
    throw std::logic_error(std::string(site) + ": counts travel as int64");
  execute(group, site, Collective::allgather, args_of(all.size(), DataType::int64), mine.data(),
          all, false, Join::now);
}

void CollectiveCalls::inject_fault(const GroupComm& g, std::string_view site, Array& data) {
  if (!matches(fault_, site) || fault_.kind == Fault::Kind::skip || data.empty() ||
      !is_storage_dtype(data.dtype()) || g.position().position != g.size() - 1)
    return;
  // Element 0 through the host, on the compute stream (which waited for the call).
  float v = 0;
  if (data.dtype() == DataType::bfloat16) {
    bfloat16_t b;
    engine_.download(&b, data.data(), sizeof b);
    v = to_float(b);
  } else {
    engine_.download(&v, data.data(), sizeof v);
  }
  v = fault_.kind == Fault::Kind::corrupt ? store_value(v + 1.0f, data.dtype())
                                          : std::numeric_limits<float>::quiet_NaN();
  if (data.dtype() == DataType::bfloat16) {
    const bfloat16_t b = to_bfloat16(v);
    engine_.upload(data.data(), &b, sizeof b);
  } else {
    engine_.upload(data.data(), &v, sizeof v);
  }
}

}  // namespace collscope::layers
