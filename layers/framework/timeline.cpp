#include "collscope/layers/framework/timeline.hpp"

#include <algorithm>

namespace collscope::layers {

Intervals union_of(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [a, b] : v) {
    if (b < a) continue;
    if (!out.empty() && a <= out.back().second) out.back().second = std::max(out.back().second, b);
    else out.emplace_back(a, b);
  }
  return out;
}

double length_of(const Intervals& disjoint) {
  double sum = 0;
  for (const auto& [a, b] : disjoint) sum += b - a;
  return sum;
}

double uncovered(double a, double b, const Intervals& cover) {
  if (b <= a) return 0;
  double covered = 0;
  for (const auto& [c, d] : cover) covered += std::max(0.0, std::min(b, d) - std::max(a, c));
  return (b - a) - covered;
}

Timeline::~Timeline() {
  for (Engine::Event e : pool_) engine_.destroy_event(e);
}

Engine::Event Timeline::next() {
  if (used_ == pool_.size()) pool_.push_back(engine_.create_event());
  return pool_[used_++];
}

void Timeline::begin() {
  used_ = 0;
  marks_.clear();
  calls_.clear();
  begin_ = next();
  end_ = nullptr;
  engine_.record(begin_, engine_.stream());
}

Engine::Event Timeline::pause() {
  Engine::Event e = next();
  engine_.record(e, engine_.stream());
  marks_.push_back(e);
  return e;
}

void Timeline::resume() {
  Engine::Event e = next();
  engine_.record(e, engine_.stream());
  marks_.push_back(e);
}

void Timeline::comm_start(Engine::Stream s) {
  Engine::Event e = next();
  engine_.record(e, s);
  calls_.emplace_back(e, nullptr);
}

Engine::Event Timeline::comm_end(Engine::Stream s) {
  Engine::Event e = next();
  engine_.record(e, s);
  calls_.back().second = e;
  return e;
}

void Timeline::end() {
  end_ = next();
  engine_.record(end_, engine_.stream());
}

PassTimes Timeline::read() {
  const auto at = [&](Engine::Event e) { return engine_.elapsed_ms(begin_, e) * 1e3; };
  PassTimes t;
  t.total_us = at(end_);
  // Compute: [begin, pause 1], [resume 1, pause 2], ..., [resume n, end].
  Intervals busy;
  double open = 0;
  for (std::size_t i = 0; i < marks_.size(); ++i) {
    if (i % 2 == 0) busy.emplace_back(open, at(marks_[i]));
    else open = at(marks_[i]);
  }
  busy.emplace_back(open, t.total_us);
  busy = union_of(busy);
  t.compute_us = length_of(busy);
  Intervals comm;
  for (const auto& [start, stop] : calls_) {
    const double a = at(start), b = at(stop);
    comm.emplace_back(a, b);
    t.call_us.push_back(b - a);
    t.call_exposed_us.push_back(uncovered(a, b, busy));
  }
  const Intervals all = union_of(comm);
  t.comm_us = length_of(all);
  for (const auto& [a, b] : all) t.exposed_us += uncovered(a, b, busy);
  return t;
}

}  // namespace collscope::layers
