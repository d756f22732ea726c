#include "collscope/sequencer.hpp"

namespace collscope {

Sequencer::Sequencer(std::size_t max_sends_in_flight)
    : window_(max_sends_in_flight == 0 ? 1 : max_sends_in_flight) {}

void Sequencer::start(Plan& plan, Steps& steps) {
  plan_ = &plan;
  steps_ = &steps;
  started_ = finished_ = false;
  actions_.clear();
  cursor_ = 0;
  in_flight_.clear();
  step_recvs_.clear();
  deferred_[0].clear();
  deferred_[1].clear();
  deferred_which_ = 0;
  free_ids_.clear();
  next_fresh_id_ = 0;
}

const Action& Sequencer::next() {
  if (cursor_ < actions_.size()) return actions_[cursor_++];
  actions_.clear();
  cursor_ = 0;
  if (finished_) return end_;
  if (!queue_next_step()) {
    queue_end();
    finished_ = true;
  }
  return actions_[cursor_++];
}

// The schedule is resumed only here, once every action of the last step was handed out.
bool Sequencer::queue_next_step() {
  while (steps_->next()) {
    if (!started_) plan_->freeze();
    started_ = true;
    const Step& s = steps_->value();
    if (s.empty()) continue;
    queue_step(s);
    return true;
  }
  plan_->freeze();
  return false;
}

void Sequencer::queue_step(const Step& s) {
  push({Action::Kind::begin_step, &s, nullptr, nullptr, 0});
  step_recvs_.clear();
  step_recv_ranges_.clear();
  for (const CommOp& op : s.comm) {
    if (!op.receives()) continue;
    const Range range = plan_->locate(op.buf, op.bytes);
    queue_wait_sends_overlapping(range);
    const std::uint32_t id = new_id();
    push({Action::Kind::post_recv, nullptr, &op, nullptr, id});
    step_recvs_.push_back(id);
    step_recv_ranges_.push_back(range);
  }
  // The last step's local ops, if it let them overlap; they stay valid until the next
  // step reuses their vector.
  std::vector<LocalOp>& kept = deferred_[deferred_which_];
  std::vector<LocalOp>& fresh = deferred_[1 - deferred_which_];
  fresh.clear();
  for (const LocalOp& op : kept) queue_local(op);
  for (const CommOp& op : s.comm) {
    if (op.receives()) continue;
    const std::uint32_t id = new_id();
    push({Action::Kind::post_send, nullptr, &op, nullptr, id});
    in_flight_.push_back({id, plan_->locate(op.buf, op.bytes)});
    if (in_flight_.size() > window_) queue_wait_in_flight(0);
  }
  std::size_t early = 0;
  if (!s.overlap_next)
    while (early < s.local.size() && !touches_step_recvs(s.local[early])) queue_local(s.local[early++]);
  for (std::uint32_t id : step_recvs_) {
    push({Action::Kind::wait, nullptr, nullptr, nullptr, id});
    free_ids_.push_back(id);
  }
  if (s.overlap_next)
    fresh.assign(s.local.begin(), s.local.end());
  else
    for (std::size_t i = early; i < s.local.size(); ++i) queue_local(s.local[i]);
  deferred_which_ = 1 - deferred_which_;
}

void Sequencer::queue_end() {
  for (const LocalOp& op : deferred_[deferred_which_]) queue_local(op);
  while (!in_flight_.empty()) queue_wait_in_flight(0);
  push({Action::Kind::end, nullptr, nullptr, nullptr, 0});
}

void Sequencer::queue_local(const LocalOp& op) {
  queue_wait_sends_overlapping(plan_->locate(op.out, op.bytes));
  push({Action::Kind::local, nullptr, nullptr, &op, 0});
}

bool Sequencer::touches_step_recvs(const LocalOp& op) const {
  const Range out = plan_->locate(op.out, op.bytes);
  const Range a = plan_->locate(op.a, op.bytes);
  const Range b = op.kind == LocalKind::reduce ? plan_->locate(op.b, op.bytes) : Range{};
  for (const Range& r : step_recv_ranges_)
    if (r.overlaps(out) || r.overlaps(a) || r.overlaps(b)) return true;
  return false;
}

void Sequencer::queue_wait_sends_overlapping(const Range& r) {
  for (std::size_t i = 0; i < in_flight_.size();) {
    if (in_flight_[i].range.overlaps(r))
      queue_wait_in_flight(i);  // erases entry i
    else
      ++i;
  }
}

void Sequencer::queue_wait_in_flight(std::size_t i) {
  const std::uint32_t id = in_flight_[i].id;
  push({Action::Kind::wait, nullptr, nullptr, nullptr, id});
  in_flight_.erase(in_flight_.begin() + static_cast<long>(i));
  free_ids_.push_back(id);  // the wait comes before any later post that reuses it
}

std::uint32_t Sequencer::new_id() {
  if (!free_ids_.empty()) {
    const std::uint32_t id = free_ids_.back();
    free_ids_.pop_back();
    return id;
  }
  const std::uint32_t id = next_fresh_id_++;
  if (handles_.size() <= id) handles_.resize(id + 1);
  return id;
}

}  // namespace collscope
