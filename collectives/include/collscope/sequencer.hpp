// The order in which a schedule's operations are issued by an executor that posts
// non-blocking messages and waits for them (the host executor; the time model replays
// the same order, so it predicts what the executor really does).
//
// For each non-empty step:
//   1. post the step's receives;
//   2. run the previous step's local ops, if that step allowed overlap (they overlap
//      these receives);
//   3. post the step's sends;
//   4. run the step's leading local ops that touch none of the bytes its receives
//      write (they overlap the messages in flight: an allgather places its own block
//      while the first block travels);
//   5. wait for the step's receives;
//   6. run the step's other local ops, or keep them all for step 2 of the next step.
// Sends stay in flight after their step. One is waited for only when
//   - a receive or a local op is about to write bytes it reads (its buffer is reused),
//   - more than `max_sends_in_flight` are in flight (the oldest goes first), or
//   - the call ends.
// Overlap is found through Plan::locate, so aliased in-place buffers count too.
//
// The sequencer is pure: it hands out Actions one at a time and never touches memory.
// Each posted message gets a small id, reused once it has been waited for; the caller
// keeps its own handle for it in handle(id) (a transport request, an event index).
#pragma once

#include <cstdint>
#include <vector>

#include "collscope/schedule.hpp"

namespace collscope {

struct Action {
  enum class Kind : std::uint8_t { begin_step, post_recv, post_send, wait, local, end };
  Kind kind = Kind::end;
  const Step* step = nullptr;      // begin_step
  const CommOp* comm = nullptr;    // post_recv, post_send
  const LocalOp* local = nullptr;  // local
  std::uint32_t id = 0;            // post_*: the message's id; wait: the id waited for
};

class Sequencer {
 public:
  static constexpr std::size_t kDefaultSendWindow = 64;

  explicit Sequencer(std::size_t max_sends_in_flight = kDefaultSendWindow);

  // Starts a call. `plan` is frozen once the first step exists; both must outlive the call.
  void start(Plan& plan, Steps& steps);
  // The next action; Kind::end once the call is over (and from then on).
  const Action& next();
  // The caller's handle for message `id` (valid from its post to its wait).
  std::uint64_t& handle(std::uint32_t id) { return handles_[id]; }

 private:
  struct InFlight {
    std::uint32_t id;
    Range range;  // the bytes the send reads
  };

  bool queue_next_step();
  void queue_end();
  void queue_step(const Step& s);
  void queue_local(const LocalOp& op);
  bool touches_step_recvs(const LocalOp& op) const;
  void queue_wait_sends_overlapping(const Range& r);
  void queue_wait_in_flight(std::size_t i);
  std::uint32_t new_id();
  void push(Action a) { actions_.push_back(a); }

  std::size_t window_;
  Plan* plan_ = nullptr;
  Steps* steps_ = nullptr;
  bool started_ = false, finished_ = false;

  std::vector<Action> actions_;  // the current step's actions
  std::size_t cursor_ = 0;
  Action end_;

  std::vector<InFlight> in_flight_;  // sends, oldest first
  std::vector<std::uint32_t> step_recvs_;
  std::vector<Range> step_recv_ranges_;
  std::vector<LocalOp> deferred_[2];  // [which]: kept from the last step / being queued
  int deferred_which_ = 0;

  std::vector<std::uint64_t> handles_;
  std::vector<std::uint32_t> free_ids_;
  std::uint32_t next_fresh_id_ = 0;
};

}  // namespace collscope
