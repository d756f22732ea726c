#include "tree_pipeline.hpp"

#include <algorithm>
#include <vector>

#include "collscope/volume.hpp"

namespace collscope::detail {
namespace {

using patterns::at;
using patterns::Block;


// Segments in flight per link. Posting every segment at once makes MPI's matching
// queues long and the time quadratic in the segment count (thousands of segments of a
// small --segment): a window keeps both queues short at no cost in bandwidth.
constexpr std::size_t kWindow = 16;

// Sends in order; waits for the oldest ones so at most `keep` stay in flight.
struct SendQueue {
  std::vector<Request> reqs;
  std::size_t done = 0;
  void push(Comm& comm, Request r, std::size_t keep) {
    reqs.push_back(r);
    while (reqs.size() - done > keep) comm.wait(reqs[done++]);
  }
  void finish(Comm& comm) { comm.wait_all(std::span(reqs).subspan(done)); }
};

Block segment(const TreeJob& job, std::size_t c, std::size_t seg_elems) {
  const std::size_t first = c * seg_elems;
  return {job.part.offset + first, std::min(seg_elems, job.part.count - first)};
}

// Receive buffers of the reduce phase: two per (job, child), used alternately so the
// next segment can arrive while this one is being reduced.
struct Inbox {
  Comm& comm;
  std::size_t seg_bytes;
  std::byte* buf(std::size_t job, int child, std::size_t c) {
    const int slot = static_cast<int>(job * 4 + static_cast<std::size_t>(child) * 2 + c % 2);
    return static_cast<std::byte*>(comm.scratch(slot, seg_bytes));
  }
};

struct ReduceState {
  std::vector<Request> child_recv;  // [job][child][segment parity]
  Request& recv(std::size_t job, int child, std::size_t c) {
    return child_recv[(job * 2 + static_cast<std::size_t>(child)) * 2 + c % 2];
  }
  SendQueue sends;
};

void post_child_recvs(Comm& comm, const CollArgs& a, const TreeJob& job, std::size_t j,
                      std::size_t c, std::size_t seg_elems, Inbox& inbox, ReduceState& st) {
  if (c >= num_segments(job.part.count, seg_elems)) return;
  const Block seg = segment(job, c, seg_elems);
  for (int i = 0; i < 2; ++i) {
    const int child = job.node.children[i];
    if (child < 0) continue;
    st.recv(j, i, c) =
        comm.irecv(child, inbox.buf(j, i, c), seg.count * a.elem_size(), job.tag);
  }
}

// Reduces segment c of one job: own data op child 0 op child 1, then sends it up.
void reduce_segment(Comm& comm, const CollArgs& a, const TreeJob& job, std::size_t j,
                    std::size_t c, std::size_t seg_elems, Inbox& inbox, ReduceState& st) {
  const std::size_t elem = a.elem_size();
  const Block seg = segment(job, c, seg_elems);
  const std::byte* mine = at(a.sendbuf, seg, elem);
  std::byte* acc = at(a.recvbuf, seg, elem);
  post_child_recvs(comm, a, job, j, c + 1, seg_elems, inbox, st);  // in the other buffer
  const std::byte* partial = mine;
  for (int i = 0; i < 2; ++i) {
    if (job.node.children[i] < 0) continue;
    comm.wait(st.recv(j, i, c));
    comm.reducer().reduce(acc, partial, inbox.buf(j, i, c), seg.count, a.dtype, a.op);
    partial = acc;
  }
  if (job.node.parent >= 0)
    st.sends.push(comm, comm.isend(job.node.parent, partial, seg.count * elem, job.tag), kWindow);
  else if (partial != acc)
    comm.reducer().copy(acc, partial, seg.count * elem);  // a lone root, out of place
}

void reduce_phase(Comm& comm, const CollArgs& a, std::span<const TreeJob> jobs,
                  std::size_t seg_elems) {
  Inbox inbox{comm, seg_elems * a.elem_size()};
  ReduceState st;
  st.child_recv.resize(jobs.size() * 4);
  std::size_t max_segs = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    post_child_recvs(comm, a, jobs[j], j, 0, seg_elems, inbox, st);
    max_segs = std::max(max_segs, num_segments(jobs[j].part.count, seg_elems));
  }
  for (std::size_t c = 0; c < max_segs; ++c) {
    comm.step("reduce", static_cast<int>(c));
    for (std::size_t j = 0; j < jobs.size(); ++j)
      if (c < num_segments(jobs[j].part.count, seg_elems))
        reduce_segment(comm, a, jobs[j], j, c, seg_elems, inbox, st);
  }
  // The broadcast overwrites these buffers: the sends must be finished first.
  st.sends.finish(comm);
}

// Segment c of a job from its parent, straight into its place in recvbuf.
Request post_parent_recv(Comm& comm, const CollArgs& a, const TreeJob& job, std::size_t c,
                         std::size_t seg_elems) {
  if (job.node.parent < 0 || c >= num_segments(job.part.count, seg_elems)) return {};
  const Block seg = segment(job, c, seg_elems);
  return comm.irecv(job.node.parent, at(a.recvbuf, seg, a.elem_size()),
                    seg.count * a.elem_size(), job.tag + 1);
}

void broadcast_phase(Comm& comm, const CollArgs& a, std::span<const TreeJob> jobs,
                     std::size_t seg_elems) {
  const std::size_t elem = a.elem_size();
  // Receives run kWindow segments ahead: from_parent[j][c % kWindow] is segment c.
  std::vector<std::vector<Request>> from_parent(jobs.size(), std::vector<Request>(kWindow));
  std::size_t max_segs = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    max_segs = std::max(max_segs, num_segments(jobs[j].part.count, seg_elems));
    for (std::size_t c = 0; c < kWindow; ++c)
      from_parent[j][c] = post_parent_recv(comm, a, jobs[j], c, seg_elems);
  }
  SendQueue sends;
  for (std::size_t c = 0; c < max_segs; ++c) {
    comm.step("broadcast", static_cast<int>(c));
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const TreeJob& job = jobs[j];
      if (c >= num_segments(job.part.count, seg_elems)) continue;
      comm.wait(from_parent[j][c % kWindow]);
      from_parent[j][c % kWindow] = post_parent_recv(comm, a, job, c + kWindow, seg_elems);
      const Block seg = segment(job, c, seg_elems);
      for (int child : job.node.children)
        if (child >= 0)
          sends.push(comm, comm.isend(child, at(a.recvbuf, seg, elem), seg.count * elem,
                                      job.tag + 1),
                     2 * kWindow);
    }
  }
  sends.finish(comm);
}

}  // namespace

std::size_t segment_elems(const CollArgs& a) {
  return std::max<std::size_t>(1, a.segment_bytes / a.elem_size());
}

std::size_t num_segments(std::size_t elems, std::size_t seg_elems) {
  return (elems + seg_elems - 1) / seg_elems;
}

void tree_reduce_broadcast(Comm& comm, const CollArgs& a, std::span<const TreeJob> jobs) {
  const std::size_t seg_elems = segment_elems(a);
  reduce_phase(comm, a, jobs, seg_elems);
  broadcast_phase(comm, a, jobs, seg_elems);
}

void add_tree_job_volume(RankVolume& v, const patterns::TreeNode& node,
                         std::size_t part_elems, const CollArgs& a) {
  const std::uint64_t bytes = part_elems * a.elem_size();
  const std::uint64_t msgs = num_segments(part_elems, segment_elems(a));
  const std::uint64_t links = static_cast<std::uint64_t>(node.num_children()) +
                              (node.parent >= 0 ? 1 : 0);
  // Each link carries the part once up (reduce) and once down (broadcast).
  v.sent_bytes += links * bytes;
  v.recv_bytes += links * bytes;
  v.sent_msgs += links * msgs;
  v.recv_msgs += links * msgs;
}

}  // namespace collscope::detail
