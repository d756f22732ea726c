#include "tree_pipeline.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace collscope::detail {
namespace {

using patterns::Block;

constexpr int kMaxJobs = 2;

// What one job needs through the call: its tags, its inboxes, its segments.
struct JobState {
  const TreeJob* job;
  std::uint32_t up_tag = 0, down_tag = 0;
  BufRef inbox;               // [child 0..1][parity 0..1] segments
  std::size_t seg_elems = 1;  // elements per segment
  std::size_t segments = 0;
};

Block segment(const JobState& j, std::size_t c) {
  const std::size_t first = c * j.seg_elems;
  return {j.job->part.offset + first, std::min(j.seg_elems, j.job->part.count - first)};
}

BufRef inbox(const JobState& j, const Plan& p, int child, std::size_t c) {
  const std::size_t slot = static_cast<std::size_t>(child) * 2 + c % 2;
  return j.inbox.plus(slot * j.seg_elems * p.elem());
}

// The segment a rule of the form "segment c moves in step c + shift" moves in step t.
bool segment_at(const JobState& j, int t, int shift, std::size_t& c) {
  const long v = static_cast<long>(t) - shift;
  if (v < 0 || static_cast<std::size_t>(v) >= j.segments) return false;
  c = static_cast<std::size_t>(v);
  return true;
}

// The receives and sends of one job in step t; true if it reduces a segment in it.
bool add_job_step(StepBuilder& s, const Plan& p, const JobState& j, int t) {
  const TreeJob& job = *j.job;
  const int D = job.tree_depth, d = job.depth;
  const bool leaf = job.node.num_children() == 0, root = job.node.parent < 0;
  std::size_t c = 0;
  bool reduces = false;
  if (!leaf && segment_at(j, t, D - d - 1, c)) {  // up: the children's sums arrive
    const Block seg = segment(j, c);
    int i = 0;
    BufRef partial = p.send_at(seg);
    for (int child : job.node.children) {
      if (child < 0) continue;
      s.recv(child, inbox(j, p, i, c), p.bytes(seg), j.up_tag);
      s.reduce(p.recv_at(seg), partial, inbox(j, p, i, c), p.bytes(seg));
      partial = p.recv_at(seg);
      ++i;
    }
    reduces = true;
  }
  if (!root && segment_at(j, t, D - d, c)) {  // up: our sum (a leaf: its input) leaves
    const Block seg = segment(j, c);
    s.send(job.node.parent, leaf ? p.send_at(seg) : p.recv_at(seg), p.bytes(seg), j.up_tag);
  }
  if (!root && segment_at(j, t, D + d - 1, c)) {  // down: the final values arrive
    const Block seg = segment(j, c);
    s.recv(job.node.parent, p.recv_at(seg), p.bytes(seg), j.down_tag);
  }
  if (!leaf && segment_at(j, t, D + d, c)) {  // down: and go on to the children
    const Block seg = segment(j, c);
    for (int child : job.node.children)
      if (child >= 0) s.send(child, p.recv_at(seg), p.bytes(seg), j.down_tag);
  }
  return reduces;
}

}  // namespace

Steps pipelined_tree_allreduce(Plan& p, std::span<const TreeJob> jobs) {
  StepBuilder s(p);
  if (p.size() == 1) {
    co_yield s.copy(Plan::recv(), Plan::send(), p.count() * p.elem()).step("copy", 0);
    co_return;
  }
  std::array<JobState, kMaxJobs> state{};
  int last_step = 0;
  const std::size_t seg_elems = std::max<std::size_t>(1, p.args().segment_bytes / p.elem());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    JobState& j = state[i];
    j.job = &jobs[i];
    j.up_tag = p.tag();
    j.down_tag = p.tag();
    j.seg_elems = std::min(seg_elems, std::max<std::size_t>(1, jobs[i].part.count));
    j.segments = (jobs[i].part.count + j.seg_elems - 1) / j.seg_elems;
    if (jobs[i].node.num_children() > 0 && j.segments > 0)
      j.inbox = p.scratch(4 * j.seg_elems * p.elem());
    last_step = std::max(last_step, static_cast<int>(j.segments) + 2 * jobs[i].tree_depth);
  }
  for (int t = 0; t <= last_step; ++t) {
    bool reduces = false;
    for (std::size_t i = 0; i < jobs.size(); ++i) reduces |= add_job_step(s, p, state[i], t);
    co_yield s.step(reduces ? "tree up" : "tree down", t, reduces);
  }
}

}  // namespace collscope::detail
