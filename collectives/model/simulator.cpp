// The discrete-event simulator: replays every rank's trace against the model.
//
// Rules (MODEL.md, "The simulator"):
// - Each rank has a clock, starting at start_lat, and runs its events in trace order.
//   Everything happens in the order of time: the earliest pending thing (a rank's next
//   event at its clock, or the end of a transfer) goes next; ties: ends of transfers
//   first, then the lower rank.
// - A send's link class is the pair's (same node: intra_node, else inter_node). Posting it
//   costs the sender `overhead` on its clock; then the transfer joins two first-come
//   first-served queues of that class: the sender's egress port and the receiver's
//   ingress port. It moves while it heads both, at a rate given by its size: its port time
//   one way, or both ways while the opposite direction is busy at either end (the sender
//   is receiving, or the receiver sending, on that class). With inter_node links
//   per_node_pair, a message between nodes queues instead on the one link from its
//   sender's node to its receiver's, and the opposite direction is the link back.
//   When that changes mid-way, the rest goes at the other rate. A message whose bytes
//   are the caller's input uses the class's input curves where the model has them. On
//   a class whose bytes the receiver's CPU moves (moved_by receiver), a transfer pauses
//   while its receiver reduces or copies. It arrives link_delay after its last byte
//   left.
// - Sends and receives match in order per (src, dst, seq, tag), as MPI matches them.
// - Waiting on a receive moves the clock to max(clock, arrival), then adds `overhead`;
//   the rank sleeps until the matching send has arrived. Waiting on a send moves it to
//   the time its last byte left the sender's port (no acknowledgement).
// - A reduction or copy of b bytes costs the model's time for b (a curve by size, or a
//   rate). Posting a receive costs nothing.
// - A rank's footprint is the most it sends, receives, reduces or copies in the call; a
//   message, reduction or copy costs at least its bytes at the footprint's rate (for a
//   message, the larger footprint of its two ranks): the pieces of a large call stream
//   from the memory level the whole call lives in.
// The call's start_lat and sync_lat come from intra_node when every rank is on one
// node, else from inter_node.
#include <algorithm>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "collscope/errors.hpp"
#include "collscope/fifo.hpp"
#include "collscope/model.hpp"
#include "channel_table.hpp"

namespace collscope {
namespace {

constexpr int kIntra = 0, kInter = 1, kClasses = 2;

// start_lat and sync_lat of the call: intra_node's on one node, else inter_node's.
const LinkParams& call_params(const std::vector<int>& nodes, const Model& model) {
  const bool one_node =
      std::all_of(nodes.begin(), nodes.end(), [&](int n) { return n == nodes.front(); });
  return one_node ? model.intra_node : model.inter_node;
}

std::size_t idx(int r) { return static_cast<std::size_t>(r); }

// A whole trace as a source, a slice at a time.
class TraceSource final : public EventSource {
 public:
  explicit TraceSource(const RankTrace& trace) : events_(trace.events) {}
  bool fill(std::vector<TraceEvent>& out) override {
    if (at_ == events_.size()) return false;
    const std::size_t end = std::min(events_.size(), at_ + kSlice);
    out.insert(out.end(), events_.begin() + static_cast<long>(at_),
               events_.begin() + static_cast<long>(end));
    at_ = end;
    return true;
  }

 private:
  static constexpr std::size_t kSlice = 1024;
  const std::vector<TraceEvent>& events_;
  std::size_t at_ = 0;
};

struct Transfer {
  int src = 0, dst = 0;
  int out = 0, in = 0;  // the ports it queues on (one and the same for a node-pair link)
  std::uint8_t cls = kIntra;
  bool started = false, both_ways = false, paused = false;
  bool from_input = false;  // its bytes are the caller's input (TraceEvent::from_input)
  int refs = 2;  // its send's and its receive's waits still to come; 0: the slot is free
  double bytes = 0;
  double done = 0;   // share of the port time behind it, 0..1, as of `since`
  double since = 0;  // when `done` was last brought up to date
  double left = -1;  // its last byte left the sender's port (-1: not yet)
  double arrival = -1;
  unsigned version = 0;  // a rate change makes the end events before it stale; kept when
                         // the slot is reused, so an old end event never matches
  int send_waiter = -1, recv_waiter = -1;  // ranks asleep until it left / arrived
};


// What a send or receive event turned into.
struct Posted {
  std::uint32_t event = 0;  // its index in the rank's trace
  int transfer = -1;        // the matched transfer (-1: a receive no send has come for yet)
  TraceOp op = TraceOp::send;
  bool waiting = false;  // its rank waits for it, and no send has come yet
  bool waited = false;
};

struct RankState {
  EventSource* source = nullptr;
  std::vector<TraceEvent> buffer;  // the events read ahead; buffer[at] is event pc
  std::size_t at = 0;
  bool ended = false;              // the source has no more
  std::uint32_t pc = 0;            // the index of the next event in the rank's trace
  double footprint = 0;  // bytes: the most it sends, receives, reduces or copies
  double clock = 0;
  bool overhead_paid = false;  // the send at pc has been paid for, not yet posted
  bool computing = false;      // in a reduction or copy (until its clock)
  // Its sends and receives from the oldest one not yet waited for, in trace order, so a
  // rank keeps only what it still has in flight (and nothing for its other events).
  Fifo<Posted> posted;
  // The entry of `event`, or null. Most lookups are of one of the last few messages
  // (a step waits for its own receives) or of the oldest (the send window): those are
  // tried first, in lines that are in the cache; a binary search finds the rest.
  Posted* find_posted(std::uint32_t event) {
    Posted* first = posted.begin();
    Posted* last = posted.end();
    for (Posted* p = last; p != first && last - p < 4;) {
      --p;
      if (p->event == event) return p;
      if (p->event < event) return nullptr;
    }
    if (first != last && first->event == event) return first;
    Posted* p = std::lower_bound(first, last, event,
                                 [](const Posted& q, std::uint32_t ev) { return q.event < ev; });
    return p != last && p->event == event ? p : nullptr;
  }
};

// Something that happens at a time: a transfer's last byte leaves (kind 0), or a rank
// runs its next event (kind 1). Ordered by time, then kind, then id: (kind, id) packed
// into one integer, since the queue's comparisons are a good part of a large run.
struct Happening {
  double time;
  std::uint64_t order;  // kind << 32 | id
  unsigned version;
  Happening(double t, int kind, int id, unsigned v)
      : time(t), order(std::uint64_t{static_cast<std::uint32_t>(kind)} << 32 |
                       static_cast<std::uint32_t>(id)),
        version(v) {}
  int kind() const { return static_cast<int>(order >> 32); }
  int id() const { return static_cast<int>(order & 0xffffffffu); }
  bool operator>(const Happening& o) const {
    return time != o.time ? time > o.time : order > o.order;
  }
};
constexpr int kTransferEnds = 0, kRankRuns = 1;

class Simulator {
 public:
  Simulator(const std::vector<RankStream>& ranks, const std::vector<int>& nodes,
            const Model& model);
  std::vector<double> run();

 private:
  int link_class(int a, int b) const { return nodes_[idx(a)] == nodes_[idx(b)] ? kIntra : kInter; }
  const LinkParams& params(int cls) const {
    return cls == kIntra ? model_.intra_node : model_.inter_node;
  }
  bool node_pair_links(int cls) const {
    return cls == kInter && model_.inter_node.links == Links::per_node_pair;
  }
  // Ports are numbered: each rank's egress and ingress port per class first, then the
  // node-pair links, made when first used.
  static int egress(int r, int cls) { return (r * kClasses + cls) * 2; }
  static int ingress(int r, int cls) { return egress(r, cls) + 1; }
  static std::uint64_t link_key(int from_node, int to_node) {
    return std::uint64_t{static_cast<std::uint32_t>(from_node)} << 32 |
           static_cast<std::uint32_t>(to_node);
  }
  int find_link(int from_node, int to_node) const {
    const auto it = links_.find(link_key(from_node, to_node));
    return it == links_.end() ? -1 : it->second;
  }
  int link(int from_node, int to_node);
  void set_ports(Transfer& t);
  // The transfer at the head of a port (moving or paused), or -1.
  int front(int port) const { return ports_[idx(port)].empty() ? -1 : ports_[idx(port)].front(); }
  // The transfer moving through a port now, or -1 (also for a port that does not exist).
  int moving(int port) const {
    if (port < 0 || ports_[idx(port)].empty()) return -1;
    const int id = ports_[idx(port)].front();
    const Transfer& t = transfers_[idx(id)];
    return t.started && !t.paused ? id : -1;
  }
  // The transfers whose moving makes t's opposite direction busy: into its sender and
  // out of its receiver, or on the link back between their nodes.
  std::pair<int, int> opposite(const Transfer& t) const {
    if (t.out == t.in)
      return {moving(find_link(nodes_[idx(t.dst)], nodes_[idx(t.src)])), -1};
    return {moving(ingress(t.src, t.cls)), moving(egress(t.dst, t.cls))};
  }
  bool opposite_busy(const Transfer& t) const {
    const auto [a, b] = opposite(t);
    return a >= 0 || b >= 0;
  }
  double port_seconds(const Transfer& t) const {
    const double footprint = std::max(ranks_[idx(t.src)].footprint, ranks_[idx(t.dst)].footprint);
    return params(t.cls).port_seconds(t.bytes, t.both_ways, footprint, t.from_input);
  }
  bool must_pause(const Transfer& t) const {
    return params(t.cls).moved_by == MovedBy::receiver && ranks_[idx(t.dst)].computing;
  }

  void wake(int r, double t) { events_.emplace(t, kRankRuns, r, 0); }
  const TraceEvent* current(int r);  // its event at pc; null when it has none left
  bool step(int r);  // false: the rank sleeps (or must run again later)
  void advance(RankState& s);
  void forget_settled(RankState& s);
  bool runs_next(int r) const;
  void compute(int r, double seconds);
  void set_computing(int r, bool computing);
  bool send(int r, const TraceEvent& e);
  void post_recv(int r, const TraceEvent& e);
  bool wait(int r, const TraceEvent& e);

  int new_transfer();
  void release(int id);
  void try_start(int id);
  void set_rate(int id);
  void refresh(int id);
  void refresh_around(const Transfer& t);
  void transfer_ends(int id, unsigned version);

  void check_peer(int r, const TraceEvent& e) const;
  [[noreturn]] void fail(int r, const std::string& what) const;
  std::string describe_deadlock();

  const std::vector<int>& nodes_;
  const Model& model_;
  std::vector<RankState> ranks_;
  std::vector<Transfer> transfers_;
  std::vector<int> free_transfers_;  // slots whose both waits are over
  std::vector<Fifo<int>> ports_;  // transfer ids, first come first served
  std::unordered_map<std::uint64_t, int> links_;  // node pair -> its port
  std::unordered_map<int, std::vector<int>> links_into_;  // node -> its links' ports
  detail::ChannelTable channels_;
  std::priority_queue<Happening, std::vector<Happening>, std::greater<>> events_;
  double now_ = 0;
};

Simulator::Simulator(const std::vector<RankStream>& ranks, const std::vector<int>& nodes,
                     const Model& model)
    : nodes_(nodes), model_(model), ranks_(ranks.size()),
      ports_(ranks.size() * kClasses * 2) {
  if (nodes.size() != ranks.size())
    throw std::invalid_argument("simulate: node_of_rank has " + std::to_string(nodes.size()) +
                                " entries for " + std::to_string(ranks.size()) + " traces");
  const double start = call_params(nodes, model).start_lat;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    ranks_[r].source = ranks[r].events;
    ranks_[r].clock = start;
    ranks_[r].footprint = ranks[r].footprint;
    wake(static_cast<int>(r), start);
  }
}

std::vector<double> Simulator::run() {
  while (!events_.empty()) {
    const Happening h = events_.top();
    events_.pop();
    now_ = h.time;
    const int id = h.id();
    if (h.kind() == kTransferEnds) {
      transfer_ends(id, h.version);
      continue;
    }
    RankState& s = ranks_[idx(id)];
    if (s.computing) set_computing(id, false);  // its reduction or copy is over
    // One event at a time, so no rank runs ahead of an earlier time elsewhere. A rank
    // whose next run would come out of the queue first anyway runs on at once.
    while (current(id) != nullptr && step(id)) {
      if (!runs_next(id)) {
        wake(id, s.clock);
        break;
      }
      now_ = s.clock;
      if (s.computing) set_computing(id, false);
    }
  }
  std::vector<double> finish;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (current(static_cast<int>(r)) != nullptr) throw RuntimeError(describe_deadlock());
    finish.push_back(ranks_[r].clock);
  }
  return finish;
}

// Whether rank r, due again at its clock, would be the next thing out of the queue: its
// run orders before the earliest pending happening (ties: transfer ends first, then
// the lower rank), as if it had been queued and taken out again.
bool Simulator::runs_next(int r) const {
  if (events_.empty()) return true;
  const Happening& top = events_.top();
  const double t = ranks_[idx(r)].clock;
  return t < top.time || (t == top.time && top.kind() == kRankRuns && r < top.id());
}

const TraceEvent* Simulator::current(int r) {
  RankState& s = ranks_[idx(r)];
  if (s.at == s.buffer.size()) {
    if (s.ended) return nullptr;
    s.buffer.clear();
    s.at = 0;
    if (!s.source->fill(s.buffer) || s.buffer.empty()) {
      s.ended = true;
      return nullptr;
    }
  }
  return &s.buffer[s.at];
}

void Simulator::advance(RankState& s) {
  ++s.pc;
  ++s.at;
}

// The waited-for messages at the front of `posted` are forgotten. Called when the front
// has just been waited for: only then can it change, and it is in the cache.
void Simulator::forget_settled(RankState& s) {
  while (!s.posted.empty() && s.posted.front().waited) s.posted.pop_front();
}

bool Simulator::step(int r) {
  RankState& s = ranks_[idx(r)];
  const TraceEvent e = *current(r);
  const bool message = e.op == TraceOp::send || e.op == TraceOp::recv;
  if (message && (s.posted.empty() || s.posted.back().event != s.pc))  // not re-entered
    s.posted.push_back({s.pc, -1, e.op});
  switch (e.op) {
    case TraceOp::send:
      if (!send(r, e)) return true;  // paid the overhead: post when the clock gets there
      break;
    case TraceOp::recv: post_recv(r, e); break;
    case TraceOp::wait:
      if (!wait(r, e)) return false;
      break;
    case TraceOp::reduce:
      compute(r, model_.reduce_seconds(static_cast<double>(e.bytes), s.footprint));
      break;
    case TraceOp::copy:
      compute(r, model_.copy_seconds(static_cast<double>(e.bytes), s.footprint));
      break;
  }
  advance(s);
  return true;
}

// A reduction or copy: the clock moves on, and until it gets there the transfers into
// this rank that its CPU would move stand still.
void Simulator::compute(int r, double seconds) {
  ranks_[idx(r)].clock += seconds;
  if (seconds > 0) set_computing(r, true);
}

void Simulator::set_computing(int r, bool computing) {
  ranks_[idx(r)].computing = computing;
  for (int cls = 0; cls < kClasses; ++cls)
    if (!node_pair_links(cls)) refresh(front(ingress(r, cls)));
  if (!node_pair_links(kInter)) return;
  const auto into = links_into_.find(nodes_[idx(r)]);
  if (into == links_into_.end()) return;
  for (const int port : into->second) {
    const int id = front(port);
    if (id >= 0 && transfers_[idx(id)].dst == r) refresh(id);
  }
}

int Simulator::link(int from_node, int to_node) {
  const auto [it, made] = links_.try_emplace(link_key(from_node, to_node), 0);
  if (made) {
    it->second = static_cast<int>(ports_.size());
    ports_.emplace_back();
    links_into_[to_node].push_back(it->second);
  }
  return it->second;
}

void Simulator::set_ports(Transfer& t) {
  if (node_pair_links(t.cls)) {
    t.out = t.in = link(nodes_[idx(t.src)], nodes_[idx(t.dst)]);
  } else {
    t.out = egress(t.src, t.cls);
    t.in = ingress(t.dst, t.cls);
  }
}

// The sender pays the overhead first, and posts when its clock has got there: the ports
// change state at the time they really do, in order with everything else.
bool Simulator::send(int r, const TraceEvent& e) {
  check_peer(r, e);
  RankState& s = ranks_[idx(r)];
  const int cls = link_class(r, e.peer);
  const double overhead = params(cls).overhead;
  if (overhead > 0 && !s.overhead_paid) {
    s.overhead_paid = true;
    s.clock += overhead;
    return false;
  }
  s.overhead_paid = false;
  const int id = new_transfer();
  Transfer& t = transfers_[idx(id)];
  t.src = r;
  t.dst = e.peer;
  t.cls = static_cast<std::uint8_t>(cls);
  t.bytes = static_cast<double>(e.bytes);
  t.from_input = e.from_input;
  set_ports(t);
  s.posted.back().transfer = id;
  if (const auto p = channels_.send({r, e.peer, e.seq, e.tag}, id)) {  // a receive takes it
    Posted& q = *ranks_[idx(p->rank)].find_posted(p->event);  // pending: still kept
    q.transfer = id;
    if (q.waiting) {  // its receiver waits
      t.recv_waiter = p->rank;
      q.waiting = false;
    }
  }
  ports_[idx(t.out)].push_back(id);
  if (t.in != t.out) ports_[idx(t.in)].push_back(id);
  try_start(id);
  return true;
}

void Simulator::post_recv(int r, const TraceEvent& e) {
  check_peer(r, e);
  RankState& s = ranks_[idx(r)];
  if (const auto transfer = channels_.recv({e.peer, r, e.seq, e.tag}, r, s.pc))
    s.posted.back().transfer = *transfer;  // the oldest unmatched send is its message
}

int Simulator::new_transfer() {
  if (free_transfers_.empty()) {
    transfers_.emplace_back();
    return static_cast<int>(transfers_.size() - 1);
  }
  const int id = free_transfers_.back();
  free_transfers_.pop_back();
  Transfer& t = transfers_[idx(id)];
  const unsigned version = t.version;
  t = Transfer{};
  t.version = version;
  return id;
}

// Both ends have waited for the transfer: nothing refers to its slot any more (it left
// both port queues before either wait could end; its stale end events carry older
// versions).
void Simulator::release(int id) {
  if (--transfers_[idx(id)].refs == 0) free_transfers_.push_back(id);
}

bool Simulator::wait(int r, const TraceEvent& e) {
  RankState& s = ranks_[idx(r)];
  Posted* found = e.request < s.pc ? s.find_posted(e.request) : nullptr;
  if (found == nullptr || found->waited)  // not a message, or waited for already
    fail(r, "event " + std::to_string(s.pc) + " waits for event " + std::to_string(e.request) +
                ", which is no earlier send or receive still pending");
  Posted& p = *found;
  const bool is_send = p.op == TraceOp::send;
  if (p.transfer < 0) {  // not sent yet: sleep until it is
    p.waiting = true;
    return false;
  }
  Transfer& t = transfers_[idx(p.transfer)];
  if (t.left < 0) {  // still moving: sleep until it has left / arrived
    (is_send ? t.send_waiter : t.recv_waiter) = r;
    return false;
  }
  if (is_send) {
    s.clock = std::max(s.clock, t.left);
  } else {
    s.clock = std::max(s.clock, t.arrival) + params(t.cls).overhead;
  }
  p.waited = true;
  release(p.transfer);
  if (s.posted.front().event == e.request) forget_settled(s);
  return true;
}

// A transfer moves once it heads both its ports' queues.
void Simulator::try_start(int id) {
  Transfer& t = transfers_[idx(id)];
  if (t.started || ports_[idx(t.out)].front() != id || ports_[idx(t.in)].front() != id)
    return;
  t.started = true;
  t.since = now_;
  t.paused = must_pause(t);
  t.both_ways = opposite_busy(t);
  if (!t.paused) set_rate(id);
  refresh_around(t);
}

// Schedules the end of a moving transfer at its current rate.
void Simulator::set_rate(int id) {
  Transfer& t = transfers_[idx(id)];
  ++t.version;
  events_.emplace(now_ + (1 - t.done) * port_seconds(t), kTransferEnds, id, t.version);
}

// Re-rates a started transfer whose opposite direction may have started or stopped, or
// whose receiver may have started or stopped computing. A transfer that pauses or
// resumes changes what the transfers around it see.
void Simulator::refresh(int id) {
  if (id < 0) return;
  Transfer& t = transfers_[idx(id)];
  if (!t.started || t.left >= 0) return;
  const bool both = opposite_busy(t), pause = must_pause(t);
  if (both == t.both_ways && pause == t.paused) return;
  if (!t.paused) {  // what it moved since the last change, at the rate it had
    const double port = port_seconds(t);
    t.done = port > 0 ? std::min(1.0, t.done + (now_ - t.since) / port) : 1.0;
  }
  t.since = now_;
  t.both_ways = both;
  const bool moving_changed = pause != t.paused;
  t.paused = pause;
  ++t.version;  // its end event, if any, is stale
  if (!t.paused) set_rate(id);
  if (moving_changed) refresh_around(t);
}

// The transfers whose opposite direction `t` is: those into its sender and out of its
// receiver.
void Simulator::refresh_around(const Transfer& t) {
  const auto [a, b] = opposite(t);
  refresh(a);
  refresh(b);
}

void Simulator::transfer_ends(int id, unsigned version) {
  Transfer& t = transfers_[idx(id)];
  if (version != t.version || t.left >= 0) return;  // stale: its rate changed since
  t.left = now_;
  t.arrival = now_ + params(t.cls).link_delay;
  ports_[idx(t.out)].pop_front();
  if (t.in != t.out) ports_[idx(t.in)].pop_front();
  refresh_around(t);
  if (!ports_[idx(t.out)].empty()) try_start(ports_[idx(t.out)].front());
  if (t.in != t.out && !ports_[idx(t.in)].empty()) try_start(ports_[idx(t.in)].front());
  if (t.send_waiter >= 0) wake(t.send_waiter, std::max(ranks_[idx(t.send_waiter)].clock, t.left));
  if (t.recv_waiter >= 0)
    wake(t.recv_waiter, std::max(ranks_[idx(t.recv_waiter)].clock, t.arrival));
}

void Simulator::check_peer(int r, const TraceEvent& e) const {
  if (e.peer < 0 || idx(e.peer) >= ranks_.size())
    fail(r, "event " + std::to_string(ranks_[idx(r)].pc) + " names peer " +
                std::to_string(e.peer) + " of " + std::to_string(ranks_.size()) + " ranks");
}

void Simulator::fail(int r, const std::string& what) const {
  throw RuntimeError("simulate: rank " + std::to_string(r) + ": " + what);
}

std::string Simulator::describe_deadlock() {
  std::string found;
  channels_.for_each_recv([&](const detail::ChannelKey& key, const detail::PendingRecv& p) {
    const Posted* q = ranks_[idx(p.rank)].find_posted(p.event);
    if (found.empty() && q != nullptr && q->waiting)
      found = "simulate: the traces cannot complete: rank " + std::to_string(key.dst) +
              " waits for message " + std::to_string(p.number) + " from rank " +
              std::to_string(key.src) + " (tag " + std::to_string(key.tag) +
              "), which is never sent";
  });
  return found.empty() ? "simulate: the traces cannot complete" : found;
}

}  // namespace

std::vector<double> simulate_ranks(const std::vector<RankStream>& ranks,
                                   const std::vector<int>& node_of_rank, const Model& model) {
  return Simulator(ranks, node_of_rank, model).run();
}

std::vector<double> simulate_ranks(const std::vector<RankTrace>& traces,
                                   const std::vector<int>& node_of_rank, const Model& model) {
  std::vector<TraceSource> sources(traces.begin(), traces.end());
  std::vector<RankStream> ranks;
  for (std::size_t r = 0; r < traces.size(); ++r)
    ranks.push_back({&sources[r], totals_of(traces[r]).footprint()});
  return simulate_ranks(ranks, node_of_rank, model);
}

namespace {

double last_clock(const std::vector<double>& finish, const std::vector<int>& node_of_rank,
                  const Model& model) {
  const LinkParams& call = call_params(node_of_rank, model);
  double last = call.start_lat;
  for (double t : finish) last = std::max(last, t);
  return last + call.sync_lat;
}

}  // namespace

double simulate(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                const Model& model) {
  return last_clock(simulate_ranks(traces, node_of_rank, model), node_of_rank, model);
}

double predict_us(const std::vector<RankTrace>& traces, const std::vector<int>& node_of_rank,
                  const Model& model) {
  return simulate(traces, node_of_rank, model) * 1e6;
}

double predict_us(const std::vector<RankStream>& ranks, const std::vector<int>& node_of_rank,
                  const Model& model) {
  return last_clock(simulate_ranks(ranks, node_of_rank, model), node_of_rank, model) * 1e6;
}

}  // namespace collscope
