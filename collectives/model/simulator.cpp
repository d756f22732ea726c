// The discrete-event simulator: replays every rank's trace against the model.
//
// Rules (MODEL.md, "The simulator"):
// - Each rank has a clock, starting at start_lat. Events run in trace order; the rank
//   with the earliest clock goes next (ties: lower rank), so every transfer is placed
//   on its ports in the order of the times at which it was posted.
// - A send posted at t on link (src, dst) uses the link class of the pair (same node:
//   intra_node, else inter_node). It starts at max(t, src's egress port free, dst's
//   ingress port free) for that class, holds both ports for bytes / (bandwidth x
//   bwurate), and arrives link_delay after its last byte leaves. A zero-byte signal is a
//   message like any other: link_delay only.
// - Sends and receives match in order per (src, dst, seq, tag), as MPI matches them.
// - Waiting on a receive moves the clock to max(clock, arrival of the matched send),
//   blocking until that send is posted. Waiting on a send moves it to the time its last
//   byte left the sender's port (no acknowledgement).
// - A reduction of b bytes costs b / reduce_rate, a local copy b / copy_rate (free when
//   copy_rate is 0); posting costs nothing.
// The call's start_lat and sync_lat come from intra_node when every rank is on one
// node, else from inter_node.
#include <algorithm>
#include <map>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>

#include "collscope/errors.hpp"
#include "collscope/model.hpp"

namespace collscope {
namespace {

constexpr int kIntra = 0, kInter = 1;

// start_lat and sync_lat of the call: intra_node's on one node, else inter_node's.
const LinkParams& call_params(const std::vector<int>& nodes, const Model& model) {
  const bool one_node =
      std::all_of(nodes.begin(), nodes.end(), [&](int n) { return n == nodes.front(); });
  return one_node ? model.intra_node : model.inter_node;
}

struct Transfer {
  double left = 0;     // the last byte has left the sender's port
  double arrival = 0;  // ... and reached the receiver
};

// All messages from src to dst with one (seq, tag), in posting order.
struct Channel {
  std::vector<Transfer> sends;
  std::size_t recvs = 0;      // receives posted so far
  int blocked_rank = -1;      // the receiver, while it waits for send number blocked_index
  std::size_t blocked_index = 0;
};
using ChannelKey = std::tuple<int, int, std::uint32_t, std::uint32_t>;  // src dst seq tag

// What a send or receive event turned into, by event index.
struct Posted {
  Channel* channel = nullptr;
  std::size_t index = 0;  // position in the channel
  bool waited = false;
};

struct RankState {
  std::size_t pc = 0;
  double clock = 0;
  std::vector<Posted> posted;  // one per event (only sends and receives filled)
};

class Simulator {
 public:
  Simulator(const std::vector<RankTrace>& traces, const std::vector<int>& nodes,
            const Model& model);
  std::vector<double> run();

 private:
  int link_class(int a, int b) const {
    return nodes_[idx(a)] == nodes_[idx(b)] ? kIntra : kInter;
  }
  const LinkParams& params(int cls) const {
    return cls == kIntra ? model_.intra_node : model_.inter_node;
  }
  static std::size_t idx(int r) { return static_cast<std::size_t>(r); }
  double& egress(int r, int cls) { return ports_[idx(r) * 4 + idx(cls)]; }
  double& ingress(int r, int cls) { return ports_[idx(r) * 4 + 2 + idx(cls)]; }

  bool step(int r);  // false: the rank blocked
  void post_send(int r, const TraceEvent& e);
  void post_recv(int r, const TraceEvent& e);
  bool wait(int r, const TraceEvent& e);
  void check_peer(int r, const TraceEvent& e) const;
  [[noreturn]] void fail(int r, const std::string& what) const;
  std::string describe_deadlock() const;

  const std::vector<RankTrace>& traces_;
  const std::vector<int>& nodes_;
  const Model& model_;
  std::vector<RankState> ranks_;
  std::vector<double> ports_;  // per rank: egress intra, egress inter, ingress intra, inter
  std::map<ChannelKey, Channel> channels_;  // std::map: pointers stay valid
  using Ready = std::pair<double, int>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready_;
};

Simulator::Simulator(const std::vector<RankTrace>& traces, const std::vector<int>& nodes,
                     const Model& model)
    : traces_(traces), nodes_(nodes), model_(model), ranks_(traces.size()),
      ports_(traces.size() * 4, 0.0) {
  if (nodes.size() != traces.size())
    throw std::invalid_argument("simulate: node_of_rank has " + std::to_string(nodes.size()) +
                                " entries for " + std::to_string(traces.size()) + " traces");
  const double start = call_params(nodes, model).start_lat;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    ranks_[r].clock = start;
    ranks_[r].posted.resize(traces[r].events.size());
    ready_.push({start, static_cast<int>(r)});
  }
}

std::vector<double> Simulator::run() {
  while (!ready_.empty()) {
    const int r = ready_.top().second;
    ready_.pop();
    RankState& s = ranks_[idx(r)];
    if (s.pc == traces_[idx(r)].events.size()) continue;  // done
    // One event at a time, so no rank runs ahead of an earlier clock elsewhere.
    if (step(r)) ready_.push({s.clock, r});
  }
  std::vector<double> finish;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r].pc < traces_[r].events.size()) throw RuntimeError(describe_deadlock());
    finish.push_back(ranks_[r].clock);
  }
  return finish;
}

bool Simulator::step(int r) {
  RankState& s = ranks_[idx(r)];
  const TraceEvent& e = traces_[idx(r)].events[s.pc];
  switch (e.op) {
    case TraceOp::send: post_send(r, e); break;
    case TraceOp::recv: post_recv(r, e); break;
    case TraceOp::wait:
      if (!wait(r, e)) return false;
      break;
    case TraceOp::reduce: s.clock += static_cast<double>(e.bytes) / model_.reduce_rate; break;
    case TraceOp::copy:
      if (model_.copy_rate > 0) s.clock += static_cast<double>(e.bytes) / model_.copy_rate;
      break;
  }
  ++s.pc;
  return true;
}

void Simulator::post_send(int r, const TraceEvent& e) {
  check_peer(r, e);
  RankState& s = ranks_[idx(r)];
  const int cls = link_class(r, e.peer);
  const LinkParams& p = params(cls);
  const double start = std::max({s.clock, egress(r, cls), ingress(e.peer, cls)});
  const double left = start + static_cast<double>(e.bytes) / p.achieved_bandwidth();
  egress(r, cls) = ingress(e.peer, cls) = left;
  Channel& c = channels_[{r, e.peer, e.seq, e.tag}];
  s.posted[s.pc] = {&c, c.sends.size(), false};
  c.sends.push_back({left, left + p.link_delay});
  if (c.blocked_rank >= 0 && c.blocked_index < c.sends.size()) {  // wake the receiver
    ready_.push({std::max(ranks_[idx(c.blocked_rank)].clock, c.sends.back().arrival),
                 c.blocked_rank});
    c.blocked_rank = -1;
  }
}

void Simulator::post_recv(int r, const TraceEvent& e) {
  check_peer(r, e);
  RankState& s = ranks_[idx(r)];
  Channel& c = channels_[{e.peer, r, e.seq, e.tag}];
  s.posted[s.pc] = {&c, c.recvs++, false};
}

bool Simulator::wait(int r, const TraceEvent& e) {
  RankState& s = ranks_[idx(r)];
  const std::vector<TraceEvent>& events = traces_[idx(r)].events;
  if (e.request >= s.pc || (events[e.request].op != TraceOp::send &&
                            events[e.request].op != TraceOp::recv))
    fail(r, "event " + std::to_string(s.pc) + " waits for event " + std::to_string(e.request) +
                ", which is no earlier send or receive");
  Posted& p = s.posted[e.request];
  if (p.waited) fail(r, "event " + std::to_string(e.request) + " is waited for twice");
  if (events[e.request].op == TraceOp::send) {
    s.clock = std::max(s.clock, p.channel->sends[p.index].left);
  } else if (p.index < p.channel->sends.size()) {
    s.clock = std::max(s.clock, p.channel->sends[p.index].arrival);
  } else {  // the matching send is not posted yet: sleep until it is
    p.channel->blocked_rank = r;
    p.channel->blocked_index = p.index;
    return false;
  }
  p.waited = true;
  return true;
}

void Simulator::check_peer(int r, const TraceEvent& e) const {
  if (e.peer < 0 || idx(e.peer) >= ranks_.size())
    fail(r, "event " + std::to_string(ranks_[idx(r)].pc) + " names peer " +
                std::to_string(e.peer) + " of " + std::to_string(ranks_.size()) + " ranks");
}

void Simulator::fail(int r, const std::string& what) const {
  throw RuntimeError("simulate: rank " + std::to_string(r) + ": " + what);
}

std::string Simulator::describe_deadlock() const {
  for (const auto& [key, c] : channels_)
    if (c.blocked_rank >= 0)
      return "simulate: the traces cannot complete: rank " + std::to_string(std::get<1>(key)) +
             " waits for message " + std::to_string(c.blocked_index) + " from rank " +
             std::to_string(std::get<0>(key)) + " (tag " + std::to_string(std::get<3>(key)) +
             "), which is never sent";
  return "simulate: the traces cannot complete";
}

}  // namespace

std::vector<double> simulate_ranks(const std::vector<RankTrace>& traces,
                                   const std::vector<int>& node_of_rank, const Model& model) {
  return Simulator(traces, node_of_rank, model).run();
}

double simulate(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                const Model& model) {
  const std::vector<double> finish = simulate_ranks(traces, node_of_rank, model);
  const LinkParams& call = call_params(node_of_rank, model);
  double last = call.start_lat;
  for (double t : finish) last = std::max(last, t);
  return last + call.sync_lat;
}

double predict_us(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                  const Model& model) {
  return simulate(traces, node_of_rank, model) * 1e6;
}

}  // namespace collscope
