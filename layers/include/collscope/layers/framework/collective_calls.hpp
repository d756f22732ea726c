// The collectives a layer calls, each at a named call site ("fwd fc2 allreduce Y [T,H]"),
// through the algorithm the command line chose for that collective (--allreduce-alg).
// Every call resets its group's counting transport, runs, and (while recording) keeps
// what this rank sent and received at that site; the time spent inside the call is the
// layer's communication time. Buffers travel in the storage dtype (tensor.hpp), unless
// the call names its own: vocab-parallel cross-entropy reduces its per-token statistics
// (max, target logit, sum of exponentials) in float32 whatever the storage, with MAX or
// SUM, as Megatron does; such a call is recorded with its own dtype and op, and its
// exact theory uses that dtype's element size.
//
// Buffers are float32 compute values; a call packs them into the dtype that travels and
// unpacks what arrives. Counts follow collective.hpp (N = the group's size, blocks by
// the uneven rule, every buffer out of place except allreduce's and broadcast's):
//
//   allreduce       data: count, in place
//   allgather       mine: block(position) of count    all: count
//   reduce_scatter  full: count                       mine: block(position)
//   alltoall        send, recv: N x count (count per peer; block j to / from rank j)
//   alltoallv       send: row sum of splits           recv: column sum (N x N, row = sender)
//   broadcast       data: count, in place, root's sent to every rank
//   scatter         full: count (root; empty elsewhere)  mine: block(position)
//   gather          mine: block(position)             full: count (root; empty elsewhere)
//
// Fault injection for the tests (COLLSCOPE_DEBUG_LAYER_FAULT=KIND:SITE, SITE a substring
// of a call site's name): after a matching call, the group's last rank adds 1 to
// element 0 of the result (corrupt) or writes NaN there (nan); skip leaves the call out
// on every rank. The verification must then fail.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/algorithm.hpp"
#include "collscope/layers/framework/group_comm.hpp"
#include "collscope/layers/math/tensor.hpp"
#include "collscope/volume.hpp"

namespace collscope::layers {

struct Fault {
  enum class Kind { none, corrupt, nan, skip } kind = Kind::none;
  std::string site;  // substring of the call sites it hits
};
// Parses COLLSCOPE_DEBUG_LAYER_FAULT; throws UsageError when it is malformed.
Fault fault_from_environment();

// What one rank saw of one call.
struct CallRecord {
  std::string site;
  Collective collective = Collective::allreduce;
  GroupKind group = GroupKind::tp;
  std::size_t count = 0;   // elements
  DataType dtype = DataType::float32;  // what travelled
  ReduceOp op = ReduceOp::sum;
  int root = 0;            // rooted collectives
  std::vector<std::uint64_t> splits;  // alltoallv: this rank's group's N x N matrix
  RankVolume measured;     // this rank's, from its group's counting transport
};

// The algorithm each collective a layer calls runs with (--<collective>-alg).
using AlgorithmChoice = std::map<Collective, const Algorithm*>;

class CollectiveCalls {
 public:
  CollectiveCalls(AlgorithmChoice algorithms, DataType storage, Fault fault = {});

  void add_group(std::unique_ptr<GroupComm> group);
  GroupComm& group(GroupKind kind);
  const Algorithm& algorithm(Collective collective) const;

  // Sums `t` over the group, in place: every rank of the group ends with the sum.
  void allreduce_sum(GroupKind group, std::string_view site, Tensor& t);
  // Reduces `data` over the group with `op`, in place, travelling as `dtype` (float32 or
  // bfloat16: a bfloat16 call rounds the values first and reduces in bfloat16).
  void allreduce(GroupKind group, std::string_view site, std::span<float> data, ReduceOp op,
                 DataType dtype);
  // The other collectives (table above); `dtype` unset: the storage dtype.
  void allgather(GroupKind group, std::string_view site, std::span<const float> mine,
                 std::span<float> all, std::optional<DataType> dtype = {});
  void reduce_scatter(GroupKind group, std::string_view site, std::span<const float> full,
                      std::span<float> mine, ReduceOp op = ReduceOp::sum,
                      std::optional<DataType> dtype = {});
  void alltoall(GroupKind group, std::string_view site, std::span<const float> send,
                std::span<float> recv, std::optional<DataType> dtype = {});
  void alltoallv(GroupKind group, std::string_view site, std::span<const float> send,
                 std::span<float> recv, std::span<const std::uint64_t> splits,
                 std::optional<DataType> dtype = {});
  void broadcast(GroupKind group, std::string_view site, std::span<float> data, int root,
                 std::optional<DataType> dtype = {});
  void scatter(GroupKind group, std::string_view site, std::span<const float> full,
               std::span<float> mine, std::size_t count, int root,
               std::optional<DataType> dtype = {});
  void gather(GroupKind group, std::string_view site, std::span<const float> mine,
              std::span<float> full, std::size_t count, int root,
              std::optional<DataType> dtype = {});
  // Integers exactly (int64): MoE's split-size exchange. `all`: N x mine.size().
  void allgather_counts(GroupKind group, std::string_view site,
                        std::span<const std::int64_t> mine, std::span<std::int64_t> all);
  DataType storage() const { return storage_; }

  // Recording: the calls made between start and stop, in order.
  void start_recording();
  void stop_recording() { recording_ = false; }
  const std::vector<CallRecord>& records() const { return records_; }
  // Seconds spent inside collective calls since the last reset.
  double comm_seconds() const { return comm_seconds_; }
  void reset_comm_seconds() { comm_seconds_ = 0; }

 private:
  void run(GroupComm& g, const Algorithm& algo, CollArgs& args);
  // One call of `collective`: packs `send` (or, in place, `recv`) as args.dtype, runs,
  // unpacks into `recv`, records, injects the fault. args has count, dtype, op, root
  // and splits set; the buffers are filled in here.
  void execute(GroupKind group, std::string_view site, Collective collective, CollArgs args,
               std::span<const float> send, std::span<float> recv, bool in_place);
  void inject_fault(const GroupComm& g, std::string_view site, std::span<float> data,
                    DataType dtype) const;

  AlgorithmChoice algorithms_;
  DataType storage_;
  Fault fault_;
  std::vector<std::unique_ptr<GroupComm>> groups_;
  std::vector<CallRecord> records_;
  bool recording_ = false;
  double comm_seconds_ = 0;
};

}  // namespace collscope::layers
