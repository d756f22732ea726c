// Schedules: what an algorithm does, as data, apart from how it is executed.
//
// A hand-written algorithm is a function from a Plan (this rank's view of one call:
// rank, size, count, dtype, root, ...) to a lazily produced sequence of Steps:
//
//   Steps allreduce_ring(Plan& p);            // collectives/allreduce/ring.cpp
//
// A step is one round of the algorithm on this rank:
//   comm   messages that run concurrently: send, recv (data), signal, wait_signal
//          (zero-byte notifications), each naming a peer, a buffer reference, a byte
//          count and a tag;
//   local  reductions and copies that run once the step's receives have completed, in
//          order (a later op may read what an earlier one wrote);
//   overlap_next  the local ops may instead run while the next step's receives are in
//          flight (pipelined algorithms: reduce segment c while segment c+1 arrives).
// Step indices are rounds shared by all ranks: a message is sent and received in steps
// with the same index, so an executor that runs each step as one batch (NCCL's group
// calls) can never deadlock, and a pure test can pair every send with its receive.
//
// Buffers are references, never pointers: the call's send buffer, its receive buffer,
// or a scratch buffer the schedule declared (Plan::scratch), plus a byte offset. Tags
// are declared too (Plan::tag). Both are declared before the first step is produced;
// the executor then allocates scratch in the memory space it runs in (host or device).
//
// Executors (executor.hpp) run schedules over a transport (host), CUDA or NCCL; the
// time model simulates them; the planned volume is counted from them. See
// docs/schedules.md for the rules a schedule must follow and how the tests check them.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <cstdint>
#include <span>
#include <vector>

#include "collscope/coll_args.hpp"
#include "collscope/generator.hpp"
#include "collscope/patterns/block.hpp"

namespace collscope {

// Which buffer a reference points into.
enum class Region : std::uint8_t { send, recv, scratch };

struct BufRef {
  Region region = Region::send;
  std::uint16_t slot = 0;   // the scratch buffer (Plan::scratch); 0 for send and recv
  std::size_t offset = 0;   // bytes from the start of the buffer

  BufRef plus(std::size_t bytes) const { return {region, slot, offset + bytes}; }
};

enum class CommKind : std::uint8_t {
  send,         // bytes from buf to peer
  recv,         // bytes from peer into buf
  signal,       // a zero-byte notification to peer (a message, no data)
  wait_signal,  // wait for peer's signal
};

struct CommOp {
  CommKind kind = CommKind::send;
  int peer = -1;
  BufRef buf;
  std::size_t bytes = 0;
  std::uint32_t tag = 0;  // declared by Plan::tag()

  bool receives() const { return kind == CommKind::recv || kind == CommKind::wait_signal; }
};

enum class LocalKind : std::uint8_t {
  reduce,  // out = a op b, elementwise over bytes / elem elements (call's dtype and op)
  copy,    // out = a, bytes
  divide,  // out = out / nranks, elementwise (the avg operator's final step)
};

struct LocalOp {
  LocalKind kind = LocalKind::copy;
  BufRef out, a, b;
  std::size_t bytes = 0;
};

struct Step {
  const char* phase = "";  // for the watchdog and for reading traces: "reduce-scatter"
  int index = 0;           // the round; a message's send and receive share it
  std::span<const CommOp> comm;
  std::span<const LocalOp> local;
  bool overlap_next = false;

  bool empty() const { return comm.empty() && local.empty(); }
};

using Steps = Generator<Step>;

// How the send and receive buffers of an in-place call overlap (collective.hpp).
struct Aliasing {
  enum Kind : std::uint8_t { none, same, send_inside_recv, recv_inside_send };
  Kind kind = none;
  std::size_t offset = 0;  // bytes: where the inner buffer starts inside the outer one
};

// A byte range in a virtual address space: the receive buffer is space 0, the send
// buffer space 1 unless it aliases the receive buffer, scratch slot s is space 2 + s.
// Two references overlap exactly when their ranges share a space and a byte.
struct Range {
  int space = 0;
  std::size_t begin = 0, end = 0;
  bool overlaps(const Range& o) const {
    return space == o.space && begin < o.end && o.begin < end;
  }
  bool operator==(const Range&) const = default;
};

class StepBuilder;

// One rank's view of one call, and what its schedule declares.
class Plan {
  static constexpr int kRecvSpace = 0, kSendSpace = 1, kFirstScratchSpace = 2;

 public:
  static constexpr std::size_t kMaxScratch = 8;    // scratch buffers per schedule
  static constexpr std::uint32_t kMaxTags = 255;   // call-local tags (Tag::kMaxLocalTag)

  Plan(int rank, int nranks, const CollArgs& args, Aliasing aliasing);

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const CollArgs& args() const { return args_; }
  std::size_t count() const { return args_.count; }
  std::size_t elem() const { return elem_; }
  bool in_place() const { return aliasing_.kind != Aliasing::none; }
  const Aliasing& aliasing() const { return aliasing_; }

  // Declarations, allowed only before the schedule's first step.
  BufRef scratch(std::size_t bytes);  // a new scratch buffer of `bytes`
  std::uint32_t tag();                // a new call-local tag (1, 2, ...)

  std::span<const std::size_t> scratch_sizes() const { return {scratch_.data(), num_scratch_}; }
  std::size_t scratch_total() const;
  // Called by whoever runs the schedule once its first step exists: later
  // declarations are a bug in the schedule (std::logic_error).
  void freeze() { frozen_ = true; }
  // Frees the operation lists of the step built last, which whoever runs the schedule
  // has issued and will not read again (the step then reads as empty). For a consumer
  // that holds thousands of schedules between their steps (the time model, a schedule
  // per rank): each would otherwise keep its last step, thousands of operations in an
  // all-to-all Bruck or a direct all-reduce.
  void drop_built_step() const;

  // References into the call's buffers, in bytes or in blocks of elements.
  static BufRef send(std::size_t byte_offset = 0) { return {Region::send, 0, byte_offset}; }
  static BufRef recv(std::size_t byte_offset = 0) { return {Region::recv, 0, byte_offset}; }
  BufRef send_at(patterns::Block b) const { return send(b.offset * elem()); }
  BufRef recv_at(patterns::Block b) const { return recv(b.offset * elem()); }
  std::size_t bytes(patterns::Block b) const { return b.count * elem(); }

  // Where `bytes` from `ref` lie (see Range).
  Range locate(BufRef ref, std::size_t bytes) const {
    Range r{kRecvSpace, ref.offset, ref.offset + bytes};
    if (ref.region == Region::scratch) {
      r.space = kFirstScratchSpace + ref.slot;
    } else if (ref.region == Region::send) {
      if (aliasing_.kind == Aliasing::none || aliasing_.kind == Aliasing::recv_inside_send)
        r.space = kSendSpace;
      else if (aliasing_.kind == Aliasing::send_inside_recv)
        r.begin += aliasing_.offset, r.end += aliasing_.offset;
    } else if (aliasing_.kind == Aliasing::recv_inside_send) {  // recv in the send space
      r.space = kSendSpace;
      r.begin += aliasing_.offset;
      r.end += aliasing_.offset;
    }
    return r;
  }

 private:
  int rank_, nranks_;
  CollArgs args_;
  std::size_t elem_;  // args_.elem_size(), asked for by every block a schedule places
  Aliasing aliasing_;
  std::array<std::size_t, kMaxScratch> scratch_{};
  std::size_t num_scratch_ = 0;
  std::uint32_t tags_ = 0;
  bool frozen_ = false;
  friend class StepBuilder;
  mutable StepBuilder* last_builder_ = nullptr;  // the builder of the step built last
};

// Builds one step at a time inside a schedule. Data messages and local ops of zero
// bytes are dropped here (both sides of a message know its size, so both drop it; the
// theory counts the same way), and so is a copy onto itself.
//
//   StepBuilder s(p);
//   s.recv(prev, in, bytes, tag).send(next, out, bytes, tag).reduce(dst, dst, in, bytes);
//   co_yield s.step("reduce-scatter", k);
class StepBuilder {
 public:
  explicit StepBuilder(const Plan& plan);
  ~StepBuilder();
  StepBuilder(const StepBuilder&) = delete;
  StepBuilder& operator=(const StepBuilder&) = delete;

  StepBuilder& send(int peer, BufRef from, std::size_t bytes, std::uint32_t tag);
  StepBuilder& recv(int peer, BufRef into, std::size_t bytes, std::uint32_t tag);
  StepBuilder& signal(int peer, std::uint32_t tag);
  StepBuilder& wait_signal(int peer, std::uint32_t tag);
  StepBuilder& reduce(BufRef out, BufRef a, BufRef b, std::size_t bytes);
  StepBuilder& copy(BufRef out, BufRef from, std::size_t bytes);
  StepBuilder& divide(BufRef buf, std::size_t bytes);

  // The step built since the last call; valid until the builder is used again.
  const Step& step(const char* phase, int index, bool overlap_next = false);

 private:
  friend class Plan;
  void start_if_done();
  void drop_lists();
  StepBuilder& comm(CommKind kind, int peer, BufRef buf, std::size_t bytes, std::uint32_t tag);
  StepBuilder& local(LocalOp op);

  // The op lists, borrowed from a per-thread pool so that building a call's steps
  // allocates nothing once warm.
  struct Storage {
    std::vector<CommOp> comm;
    std::vector<LocalOp> local;
  };
  static std::vector<std::unique_ptr<Storage>>& pool();
  static Storage* borrow();

  const Plan& plan_;
  Storage* storage_;
  std::vector<CommOp>& comm_;
  std::vector<LocalOp>& local_;
  Step step_;
  bool done_ = false;
};

}  // namespace collscope
