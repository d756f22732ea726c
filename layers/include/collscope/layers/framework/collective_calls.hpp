// The collectives a layer calls, each at a named call site ("fwd fc2 allreduce Y [T,H]"),
// through the algorithm the command line chose for that collective (--allreduce-alg),
// on the arrays themselves (host or device memory, as the engine's): what travels is
// the array's dtype, the storage dtype for activations and gradients, float32 for the
// vocabulary-parallel cross-entropy's per-token statistics (max, target logit, sum of
// exponentials, reduced with MAX or SUM as Megatron does), int64 for the MoE's counts.
// Every call resets its group's counting executor, runs, and (while recording) keeps
// what this rank sent and received at that site.
//
// Order and overlap. A call runs on its group's executor stream after the compute
// enqueued before it (an event), and the compute stream waits for its end (an event)
// before what comes next: at once (Join::now, and every call without --overlap), or
// where the layer joins it (Join::later, then join(ticket)), so compute the math allows
// runs beside it. Each call's span and the compute stream's stretches go to the
// timeline (timeline.hpp). On host memory a call is done when it returns.
//
// Counts follow collective.hpp (N = the group's size, blocks by the uneven rule, every
// buffer out of place except allreduce's and broadcast's):
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

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/layers/compute/array.hpp"
#include "collscope/layers/compute/engine.hpp"
#include "collscope/layers/framework/group_comm.hpp"
#include "collscope/layers/framework/timeline.hpp"
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
  RankVolume measured;     // this rank's, from its group's counting executor
};

// The algorithm each collective a layer calls runs with (--<collective>-alg).
using AlgorithmChoice = std::map<Collective, const Algorithm*>;

// When the compute stream waits for a call.
enum class Join { now, later };

// A call the compute stream has not yet waited for (Join::later).
struct Ticket {
  std::size_t index = static_cast<std::size_t>(-1);
};

class CollectiveCalls {
 public:
  // overlap: honour Join::later (--overlap); else every call joins at once.
  CollectiveCalls(AlgorithmChoice algorithms, Engine& engine, Fault fault = {},
                  bool overlap = false);

  void add_group(std::unique_ptr<GroupComm> group);
  GroupComm& group(GroupKind kind);
  const Algorithm& algorithm(Collective collective) const;
  Engine& engine() { return engine_; }
  bool overlap() const { return overlap_; }

  // Reduces `data` over the group with `op`, in place.
  Ticket allreduce(GroupKind group, std::string_view site, Array& data,
                   ReduceOp op = ReduceOp::sum, Join join = Join::now);
  // The other collectives (table above).
  Ticket allgather(GroupKind group, std::string_view site, const Array& mine, Array& all,
                   Join join = Join::now);
  Ticket reduce_scatter(GroupKind group, std::string_view site, const Array& full, Array& mine,
                        ReduceOp op = ReduceOp::sum, Join join = Join::now);
  Ticket alltoall(GroupKind group, std::string_view site, const Array& send, Array& recv,
                  Join join = Join::now);
  Ticket alltoallv(GroupKind group, std::string_view site, const Array& send, Array& recv,
                   std::span<const std::uint64_t> splits, Join join = Join::now);
  Ticket broadcast(GroupKind group, std::string_view site, Array& data, int root,
                   Join join = Join::now);
  Ticket scatter(GroupKind group, std::string_view site, const Array& full, Array& mine,
                 std::size_t count, int root, Join join = Join::now);
  Ticket gather(GroupKind group, std::string_view site, const Array& mine, Array& full,
                std::size_t count, int root, Join join = Join::now);
  // int64 exactly (MoE's split-size exchange); `all`: N x mine.size(). Joined at once.
  void allgather_counts(GroupKind group, std::string_view site, const Array& mine, Array& all);

  // The compute stream waits for the call (nothing when it already did).
  void join(Ticket t);
  void join_all();

  // Recording: the calls made between start and stop, in order.
  void start_recording();
  void stop_recording() { recording_ = false; }
  const std::vector<CallRecord>& records() const { return records_; }
  Timeline& timeline() { return timeline_; }

  // Collective over every group: device buffers their owners freed really go.
  void release_freed_buffers();

 private:
  // One call of `collective` on args (count, dtype, op, root and splits set) over the
  // given buffers: ordered after compute, run, recorded, the fault injected.
  Ticket execute(GroupKind group, std::string_view site, Collective collective, CollArgs args,
                 const void* send, Array& result, bool in_place, Join join);
  void inject_fault(const GroupComm& g, std::string_view site, Array& data);

  AlgorithmChoice algorithms_;
  Engine& engine_;
  Fault fault_;
  bool overlap_;
  std::vector<std::unique_ptr<GroupComm>> groups_;
  std::vector<CallRecord> records_;
  bool recording_ = false;
  Timeline timeline_;
  std::vector<Engine::Event> ends_;  // each call's end, until the compute stream waits
  std::vector<bool> joined_;
};

}  // namespace collscope::layers
