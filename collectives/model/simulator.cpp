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
//
// How it is kept (it runs for hundreds of millions of events at N = 4096):
// - The queue of things to happen holds (time, key) pairs in buckets of equal time
//   (event_queue.hpp). A transfer's end is keyed by its id, which orders ends that tie;
//   ids are handed out as slots of a pool (the most recently freed first, freed once
//   both ends have waited), the order the simulator has always used.
// - A transfer's record lives from its send until it has left and a receive has taken
//   it; then the times its two ranks wait for sit in their own entries (a sender's send,
//   a receiver's receive), so a call that has millions of messages sent and not yet
//   waited for keeps 24 bytes for each, not a record.
// - Receives no send has come for yet wait with their rank, newest first, in one chain,
//   or one per source once the rank has many (a direct all-reduce posts N - 1 at once).
// - The port, reduction and copy times of a size are computed once (CostCache).
#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "collscope/errors.hpp"
#include "collscope/model.hpp"
#include "channel_table.hpp"
#include "event_feed.hpp"
#include "event_queue.hpp"

namespace collscope {
namespace {

constexpr int kIntra = 0, kInter = 1, kClasses = 2;
constexpr std::uint32_t kNone = 0xffffffffu;

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

// A first-in first-out queue whose entries keep one position, a number that does not
// change, from their push until they leave at the front, so other records can point at
// them. The front leaves by moving an index; the space before it is reclaimed now and then.
template <class T>
class Positions {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::uint32_t push(const T& v) {
    items_.push_back(v);
    return base_ + static_cast<std::uint32_t>(items_.size() - 1);
  }
  T& at(std::uint32_t pos) { return items_[pos - base_]; }
  T& front() { return items_[head_]; }
  T& back() { return items_.back(); }
  std::uint32_t front_position() const { return base_ + static_cast<std::uint32_t>(head_); }
  std::uint32_t back_position() const { return base_ + static_cast<std::uint32_t>(items_.size() - 1); }
  void pop_front() {
    if (++head_ == items_.size()) {
      base_ += static_cast<std::uint32_t>(items_.size());
      items_.clear();
      head_ = 0;
    } else if (head_ >= 32 && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<long>(head_));
      base_ += static_cast<std::uint32_t>(head_);
      head_ = 0;
    }
  }
  // The position of the entry of trace event `event`, or kNone. Most lookups are of one
  // of the last few entries (a step waits for its own receives) or of the oldest (the
  // send window): those are tried first; a binary search finds the rest.
  std::uint32_t find(std::uint32_t event) const {
    const std::size_t first = head_, last = items_.size();
    for (std::size_t i = last; i > first && last - i < 4;) {
      --i;
      if (items_[i].event == event) return base_ + static_cast<std::uint32_t>(i);
      if (items_[i].event < event) return kNone;
    }
    if (first == last) return kNone;
    if (items_[first].event == event) return base_ + static_cast<std::uint32_t>(first);
    const auto it = std::lower_bound(items_.begin() + static_cast<long>(first), items_.end(), event,
                                     [](const T& q, std::uint32_t ev) { return q.event < ev; });
    return it != items_.end() && it->event == event
               ? base_ + static_cast<std::uint32_t>(it - items_.begin())
               : kNone;
  }
  // Fetches the lines of the oldest and the newest entry (a wait mostly looks at one).
  void prefetch_ends() const {
    if (empty()) return;
    __builtin_prefetch(&items_[head_]);
    __builtin_prefetch(&items_.back());
  }
  template <class F>
  void for_each(F f) const {
    for (std::size_t i = head_; i < items_.size(); ++i) f(base_ + static_cast<std::uint32_t>(i), items_[i]);
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
  std::uint32_t base_ = 0;  // the position of items_[0]
};

// A send its rank has posted and not yet waited for.
struct SendEntry {
  std::uint32_t event = 0;  // its index in the rank's trace
  std::uint32_t id = 0;     // its transfer; kNone once waited for
  double left = -1;         // when its last byte left the sender's port (-1: not yet)
};

// A receive its rank has posted and not yet waited for.
struct RecvEntry {
  enum State : std::uint8_t { unmatched, matched, arrived, waited };
  std::uint32_t event = 0;
  std::uint32_t link = kNone;  // unmatched: the next older unmatched receive of its chain;
                               // else the id of the transfer that brings it
  int peer = 0;
  State state = unmatched;
  bool waiting = false;  // unmatched, and its rank sleeps until a send comes for it
  union {
    struct {
      std::uint32_t seq, tag;
    } key;           // unmatched: what a send must carry to match it
    double arrival;  // arrived: when
  };
};
static_assert(sizeof(RecvEntry) == 24, "a direct all-reduce at N = 4096 holds 16.7 million");

struct RankState {
  // What every step touches, first (two cache lines with the queues' heads).
  const TraceEvent* cur = nullptr;  // event pc, unless cur == end: the events read ahead
  const TraceEvent* end = nullptr;
  double clock = 0;
  double footprint = 0;  // bytes: the most it sends, receives, reduces or copies
  std::uint32_t pc = 0;            // the index of the next event in the rank's trace
  bool computing = false;          // in a reduction or copy (until its clock)
  bool overhead_paid = false;      // the send at pc has been paid for, not yet posted
  bool ended = false;              // there are no more events
  // Its unmatched receives, newest first, chained through RecvEntry::link: one chain, or
  // once there are more than kFewUnmatched, one per source (unmatched_by_src).
  std::uint32_t unmatched_head = kNone;
  std::uint32_t unmatched = 0;
  Positions<SendEntry> sends;
  Positions<RecvEntry> recvs;
  detail::PageReader pages;  // where its events come from
  std::vector<std::uint32_t> unmatched_by_src;
};
constexpr std::uint32_t kFewUnmatched = 16;

// A message from its send until it has left and a receive has taken it.
struct Transfer {
  int src = 0, dst = 0;
  int out = 0, in = 0;  // the ports it queues on (one and the same for a node-pair link)
  std::uint32_t id = 0;
  std::uint32_t next_out = kNone, next_in = kNone;  // behind it in its ports' queues
  std::uint32_t send_pos = 0;      // its sender's SendEntry
  std::uint32_t recv_pos = kNone;  // its receiver's RecvEntry, once a receive took it
  std::uint8_t cls = kIntra;
  bool started = false, both_ways = false, paused = false;
  bool from_input = false;  // its bytes are the caller's input (TraceEvent::from_input)
  double bytes = 0;
  double done = 0;   // share of the port time behind it, 0..1, as of `since`
  double since = 0;  // when `done` was last brought up to date
  double left = -1;  // its last byte left the sender's port (-1: not yet)
  double arrival = -1;
  int send_waiter = -1, recv_waiter = -1;  // ranks asleep until it left / arrived
};

// A transfer id: its version (kept when the id is reused, so an old end event never
// matches), its record (kNone once it has left and been received) and the waits still to
// come (0: the id is free).
struct IdSlot {
  std::uint32_t version = 0;
  std::uint32_t record = kNone;
  std::uint32_t refs = 0;
};

// A port's first-come first-served queue of transfers, linked through the transfers.
struct PortQueue {
  std::uint32_t head = kNone, tail = kNone;
};

// Times by size, each computed once per distinct argument: a call's messages and local
// operations come in a few sizes, and evaluating a curve (a search over the bands, two
// divisions) for each of millions was a good part of a run. It returns the very double
// the model computes, so nothing predicted changes.
class CostCache {
 public:
  template <class Compute>
  double get(std::uint32_t what, double bytes, double footprint, Compute compute) {
    Slot& s = slots_[slot(what, bytes, footprint)];
    if (s.what != what || s.bytes != bytes || s.footprint != footprint)
      s = {what, bytes, footprint, compute()};
    return s.seconds;
  }

 private:
  struct Slot {
    std::uint32_t what = kNone;
    double bytes = 0, footprint = 0, seconds = 0;
  };
  static constexpr std::size_t kSlots = 256;
  static std::size_t slot(std::uint32_t what, double bytes, double footprint) {
    std::uint64_t h = std::bit_cast<std::uint64_t>(bytes) * 0x9E3779B97F4A7C15ull;
    h ^= std::bit_cast<std::uint64_t>(footprint) + what;
    h *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(h >> 56) & (kSlots - 1);
  }
  std::array<Slot, kSlots> slots_{};
};

// Queue keys: a transfer's end orders before a rank's run at the same time, then by id;
// the low 32 bits of an end carry its transfer's version (a rate change makes the end
// events before it stale).
constexpr std::uint64_t kRankRuns = std::uint64_t{1} << 63;
std::uint64_t end_key(std::uint32_t id, std::uint32_t version) {
  return std::uint64_t{id} << 32 | version;
}
std::uint64_t run_key(int r) { return kRankRuns | std::uint64_t{static_cast<std::uint32_t>(r)} << 32; }

class Simulator {
 public:
  Simulator(const std::vector<RankStream>& ranks, const std::vector<int>& nodes,
            const Model& model, int threads);
  std::vector<double> run();

 private:
  int link_class(int a, int b) const { return nodes_[idx(a)] == nodes_[idx(b)] ? kIntra : kInter; }
  const LinkParams& params(int cls) const {
    return cls == kIntra ? model_.intra_node : model_.inter_node;
  }
  bool receiver_moved(int cls) const { return params(cls).moved_by == MovedBy::receiver; }
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
  // The transfer at the head of a port (moving or paused), or kNone.
  std::uint32_t front(int port) const { return ports_[idx(port)].head; }
  void enqueue(std::uint32_t a);
  void dequeue(const Transfer& t);
  // The transfer moving through a port now, or kNone (also for a port that does not exist).
  std::uint32_t moving(int port) const {
    if (port < 0) return kNone;
    const std::uint32_t a = front(port);
    if (a == kNone) return kNone;
    const Transfer& t = transfers_[a];
    return t.started && !t.paused ? a : kNone;
  }
  // The transfers whose moving makes t's opposite direction busy: into its sender and
  // out of its receiver, or on the link back between their nodes.
  std::pair<std::uint32_t, std::uint32_t> opposite(const Transfer& t) const {
    if (t.out == t.in)
      return {moving(find_link(nodes_[idx(t.dst)], nodes_[idx(t.src)])), kNone};
    return {moving(ingress(t.src, t.cls)), moving(egress(t.dst, t.cls))};
  }
  bool opposite_busy(const Transfer& t) const {
    const auto [a, b] = opposite(t);
    return a != kNone || b != kNone;
  }
  double port_seconds(const Transfer& t) {
    const double footprint = std::max(ranks_[idx(t.src)].footprint, ranks_[idx(t.dst)].footprint);
    const std::uint32_t what = 4u * t.cls + 2u * t.both_ways + t.from_input;
    return costs_.get(what, t.bytes, footprint, [&] {
      return params(t.cls).port_seconds(t.bytes, t.both_ways, footprint, t.from_input);
    });
  }
  bool must_pause(const Transfer& t) const {
    return params(t.cls).moved_by == MovedBy::receiver && ranks_[idx(t.dst)].computing;
  }

  void wake(int r, double t) { events_.push(t, run_key(r)); }
  void run_rank(int r);
  bool own_only(const RankState& s, const TraceEvent& e) const;
  // A send's link class; the peer may be out of range (the send then fails when posted).
  int link_class_of(const RankState& s, int peer) const {
    if (peer < 0 || idx(peer) >= ranks_.size()) return kIntra;
    return nodes_[idx(static_cast<int>(&s - ranks_.data()))] == nodes_[idx(peer)] ? kIntra : kInter;
  }
  void prefetch_upcoming() const;
  const TraceEvent* current(int r) {  // its event at pc; null when it has none left
    const RankState& s = ranks_[idx(r)];
    return s.cur != s.end || read_ahead(r) ? s.cur : nullptr;
  }
  bool read_ahead(int r);
  bool step(int r, const TraceEvent& e);  // false: the rank sleeps
  bool runs_next(int r) const;
  void compute(int r, double seconds);
  void set_computing(int r, bool computing);
  bool send(int r, const TraceEvent& e);
  void post_recv(int r, const TraceEvent& e);
  bool wait(int r, const TraceEvent& e);
  bool wait_send(int r, std::uint32_t pos);
  bool wait_recv(int r, std::uint32_t pos);

  void add_unmatched(int r, std::uint32_t pos);
  std::uint32_t take_unmatched(int dst, int src, std::uint32_t seq, std::uint32_t tag);
  void spread_unmatched(RankState& s);
  void take_send(int r, std::uint32_t pos, std::uint32_t id);

  std::uint32_t new_id();
  void release(std::uint32_t id);
  std::uint32_t new_transfer();
  void free_transfer(std::uint32_t a);
  void try_start(std::uint32_t a);
  void set_rate(std::uint32_t a);
  void refresh(std::uint32_t a) {  // most calls find no transfer there
    if (a != kNone) refresh_moving(a);
  }
  void refresh_moving(std::uint32_t a);
  void refresh_around(const Transfer& t);
  void transfer_ends(std::uint32_t a);

  void check_peer(int r, const TraceEvent& e) const {
    if (e.peer < 0 || idx(e.peer) >= ranks_.size()) fail_peer(r, e);
  }
  [[noreturn]] void fail_peer(int r, const TraceEvent& e) const;
  [[noreturn]] void fail(int r, const std::string& what) const;
  std::string describe_deadlock();

  const std::vector<int>& nodes_;
  const Model& model_;
  std::vector<RankState> ranks_;
  detail::RankFeeds feeds_;
  // Per transfer id (IdSlot): its version, its record, the waits still to come.
  std::vector<IdSlot> ids_;
  std::vector<std::uint32_t> free_ids_;  // ids whose both waits are over, last freed on top
  std::vector<Transfer> transfers_;
  std::vector<std::uint32_t> free_transfers_;
  std::vector<PortQueue> ports_;
  std::unordered_map<std::uint64_t, int> links_;  // node pair -> its port
  std::unordered_map<int, std::vector<int>> links_into_;  // node -> its links' ports
  detail::UnmatchedSends unmatched_sends_;
  detail::EventQueue events_;
  CostCache costs_;
  bool any_receiver_moved_;  // a class whose transfers stop while their receiver computes
  double now_ = 0;
};

std::vector<EventSource*> sources_of(const std::vector<RankStream>& ranks) {
  std::vector<EventSource*> out;
  for (const RankStream& r : ranks) out.push_back(r.events);
  return out;
}

Simulator::Simulator(const std::vector<RankStream>& ranks, const std::vector<int>& nodes,
                     const Model& model, int threads)
    : nodes_(nodes), model_(model), ranks_(ranks.size()),
      feeds_(sources_of(ranks), threads > 1), ports_(ranks.size() * kClasses * 2) {
  if (nodes.size() != ranks.size())
    throw std::invalid_argument("simulate: node_of_rank has " + std::to_string(nodes.size()) +
                                " entries for " + std::to_string(ranks.size()) + " traces");
  any_receiver_moved_ = receiver_moved(kIntra) || receiver_moved(kInter);
  const double start = call_params(nodes, model).start_lat;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    ranks_[r].clock = start;
    ranks_[r].footprint = ranks[r].footprint;
    wake(static_cast<int>(r), start);
  }
}

std::vector<double> Simulator::run() {
  while (!events_.empty()) {
    const detail::EventQueue::Entry h = events_.take();
    prefetch_upcoming();
    now_ = h.time;
    const auto id = static_cast<std::uint32_t>(h.key >> 32 & 0x7fffffffu);
    if (!(h.key & kRankRuns)) {  // a transfer's end, unless its rate changed since
      const IdSlot& slot = ids_[id];
      if (static_cast<std::uint32_t>(h.key) == slot.version && slot.record != kNone &&
          transfers_[slot.record].left < 0)
        transfer_ends(slot.record);
      continue;
    }
    run_rank(static_cast<int>(id));
  }
  std::vector<double> finish;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (current(static_cast<int>(r)) != nullptr) throw RuntimeError(describe_deadlock());
    finish.push_back(ranks_[r].clock);
  }
  return finish;
}

// Runs rank r's events from its clock until it sleeps or must let earlier happenings go
// first. No rank acts on what others see ahead of an earlier time elsewhere: before each
// event that touches what other ranks or transfers see (a send's posting, a wait, a
// reduction or copy that stops transfers into it), the rank takes its turn in the order
// of time (ties: transfer ends first, then the lower rank), as if it had been queued and
// taken out again; a rank whose turn it is anyway runs on at once. Events that only move
// its own clock or post a receive (posting costs nothing, and sends and receives match
// in posting order per channel whenever each is posted) need no turn: the rank runs them
// on, and takes its turn at the next event that does.
void Simulator::run_rank(int r) {
  RankState& s = ranks_[idx(r)];
  if (s.computing) set_computing(r, false);  // its reduction or copy is over
  bool first = true;
  for (const TraceEvent* e; (e = current(r)) != nullptr; first = false) {
    // A rank that computes takes its turn first: the end of its computing resumes what
    // it stopped, at the time it ends.
    if (!first && (s.computing || !own_only(s, *e))) {
      if (!runs_next(r)) {
        wake(r, s.clock);
        return;
      }
      now_ = s.clock;
      if (s.computing) set_computing(r, false);
    }
    if (!step(r, *e)) return;  // it sleeps
  }
}

// Whether e only moves its rank's clock or posts a receive: a send's overhead (not its
// posting), a reduction or copy where no class's transfers stop while their receiver
// computes, a receive.
bool Simulator::own_only(const RankState& s, const TraceEvent& e) const {
  switch (e.op) {
    case TraceOp::recv: return true;
    case TraceOp::send:
      return !s.overhead_paid && params(link_class_of(s, e.peer)).overhead > 0;
    case TraceOp::reduce:
    case TraceOp::copy: return !any_receiver_moved_;
    case TraceOp::wait: return false;
  }
  return false;
}

// The entries about to come out of the queue are mostly ranks of the same instant, in
// order: what they will touch first is fetched now, while others run (at thousands of
// ranks it is not in the caches, and waiting for it was most of a step's time). Far
// ahead: a rank's state, or a transfer's id slot; nearer, through what those hold by
// then: the rank's current events and the ends of its queues of posted messages, or the
// transfer's record.
void Simulator::prefetch_upcoming() const {
  constexpr std::size_t kFar = 16, kNear = 8;
  std::uint64_t key;
  if (events_.peek(kFar, key)) {
    const std::uint32_t id = key >> 32 & 0x7fffffffu;
    if (key & kRankRuns) {
      const char* state = reinterpret_cast<const char*>(&ranks_[id]);
      __builtin_prefetch(state);
      __builtin_prefetch(state + 64);
    } else {
      __builtin_prefetch(&ids_[id]);
    }
  }
  if (events_.peek(kNear, key)) {
    const std::uint32_t id = key >> 32 & 0x7fffffffu;
    if (key & kRankRuns) {
      const RankState& s = ranks_[id];
      __builtin_prefetch(s.cur);
      __builtin_prefetch(s.cur + 2);
      s.sends.prefetch_ends();
      s.recvs.prefetch_ends();
    } else if (ids_[id].record != kNone) {
      __builtin_prefetch(&transfers_[ids_[id].record]);
    }
  }
}

// Whether rank r, due again at its clock, would be the next thing out of the queue: its
// run orders before the earliest pending happening (ties: transfer ends first, then
// the lower rank), as if it had been queued and taken out again.
bool Simulator::runs_next(int r) const {
  if (events_.empty()) return true;
  const detail::EventQueue::Entry top = events_.top();
  const double t = ranks_[idx(r)].clock;
  return t < top.time || (t == top.time && run_key(r) < top.key);
}

// Rank r has read every event it had: the next part of its page, or its next page.
bool Simulator::read_ahead(int r) {
  RankState& s = ranks_[idx(r)];
  if (s.ended) return false;
  bool more = s.pages.more();
  while (!more) {
    detail::Page* page = feeds_.next(r);
    if (page == nullptr) {
      s.ended = true;
      return false;
    }
    more = s.pages.start(page);
  }
  s.cur = s.pages.first();
  s.end = s.pages.last();
  return true;
}

bool Simulator::step(int r, const TraceEvent& e) {
  RankState& s = ranks_[idx(r)];
  switch (e.op) {
    case TraceOp::send:
      if (!send(r, e)) return true;  // paid the overhead: post when the clock gets there
      break;
    case TraceOp::recv: post_recv(r, e); break;
    case TraceOp::wait:
      if (!wait(r, e)) return false;
      break;
    case TraceOp::reduce:
      compute(r, costs_.get(kNone - 1, static_cast<double>(e.bytes), s.footprint, [&] {
        return model_.reduce_seconds(static_cast<double>(e.bytes), s.footprint);
      }));
      break;
    case TraceOp::copy:
      compute(r, costs_.get(kNone - 2, static_cast<double>(e.bytes), s.footprint, [&] {
        return model_.copy_seconds(static_cast<double>(e.bytes), s.footprint);
      }));
      break;
  }
  ++s.pc;
  ++s.cur;
  return true;
}

// A reduction or copy: the clock moves on, and until it gets there the transfers into
// this rank that its CPU would move stand still.
void Simulator::compute(int r, double seconds) {
  ranks_[idx(r)].clock += seconds;
  if (seconds > 0 && any_receiver_moved_) set_computing(r, true);  // else nothing stops
}

// Computing stops only what the receiver's CPU moves. In a class the network moves, no
// transfer ever pauses and every moving one's rate is up to date (each start and end
// refreshes those it touches), so a refresh there would change nothing.
void Simulator::set_computing(int r, bool computing) {
  ranks_[idx(r)].computing = computing;
  for (int cls = 0; cls < kClasses; ++cls)
    if (receiver_moved(cls) && !node_pair_links(cls)) refresh(front(ingress(r, cls)));
  if (!receiver_moved(kInter) || !node_pair_links(kInter)) return;
  const auto into = links_into_.find(nodes_[idx(r)]);
  if (into == links_into_.end()) return;
  for (const int port : into->second) {
    const std::uint32_t a = front(port);
    if (a != kNone && transfers_[a].dst == r) refresh(a);
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

void Simulator::enqueue(std::uint32_t a) {
  Transfer& t = transfers_[a];
  PortQueue& out = ports_[idx(t.out)];
  if (out.tail == kNone) out.head = a;
  else transfers_[out.tail].next_out = a;
  out.tail = a;
  if (t.in == t.out) return;
  PortQueue& in = ports_[idx(t.in)];
  if (in.tail == kNone) in.head = a;
  else transfers_[in.tail].next_in = a;
  in.tail = a;
}

// The transfer leaves the head of its ports' queues.
void Simulator::dequeue(const Transfer& t) {
  PortQueue& out = ports_[idx(t.out)];
  out.head = t.next_out;
  if (out.head == kNone) out.tail = kNone;
  if (t.in == t.out) return;
  PortQueue& in = ports_[idx(t.in)];
  in.head = t.next_in;
  if (in.head == kNone) in.tail = kNone;
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
  const std::uint32_t id = new_id();
  const std::uint32_t a = new_transfer();
  Transfer& t = transfers_[a];
  t.src = r;
  t.dst = e.peer;
  t.id = id;
  t.cls = static_cast<std::uint8_t>(cls);
  t.bytes = static_cast<double>(e.bytes);
  t.from_input = e.from_input;
  set_ports(t);
  ids_[id].record = a;
  t.send_pos = s.sends.push({s.pc, id, -1});
  const std::uint32_t pos = take_unmatched(e.peer, r, e.seq, e.tag);
  if (pos != kNone) {  // a receive takes it
    RecvEntry& q = ranks_[idx(e.peer)].recvs.at(pos);
    q.state = RecvEntry::matched;
    q.link = id;
    t.recv_pos = pos;
    if (q.waiting) {  // its receiver waits
      t.recv_waiter = e.peer;
      q.waiting = false;
    }
  } else {
    unmatched_sends_.push({r, e.peer, e.seq, e.tag}, id);
  }
  enqueue(a);
  try_start(a);
  return true;
}

void Simulator::post_recv(int r, const TraceEvent& e) {
  check_peer(r, e);
  RankState& s = ranks_[idx(r)];
  RecvEntry q;
  q.event = s.pc;
  q.peer = e.peer;
  q.key = {e.seq, e.tag};
  const std::uint32_t pos = s.recvs.push(q);
  if (const auto id = unmatched_sends_.take({e.peer, r, e.seq, e.tag}))
    take_send(r, pos, *id);  // the oldest unmatched send is its message
  else
    add_unmatched(r, pos);
}

// Receive `pos` of rank r takes the message of transfer `id`, which has arrived already
// or is still on its way.
void Simulator::take_send(int r, std::uint32_t pos, std::uint32_t id) {
  RecvEntry& q = ranks_[idx(r)].recvs.at(pos);
  const std::uint32_t a = ids_[id].record;
  Transfer& t = transfers_[a];
  q.link = id;
  if (t.left < 0) {
    q.state = RecvEntry::matched;
    t.recv_pos = pos;
    return;
  }
  q.state = RecvEntry::arrived;
  q.arrival = t.arrival;
  free_transfer(a);
  ids_[id].record = kNone;
}

void Simulator::add_unmatched(int r, std::uint32_t pos) {
  RankState& s = ranks_[idx(r)];
  if (s.unmatched_by_src.empty() && s.unmatched >= kFewUnmatched) spread_unmatched(s);
  RecvEntry& q = s.recvs.at(pos);
  std::uint32_t& head = s.unmatched_by_src.empty() ? s.unmatched_head
                                                   : s.unmatched_by_src[idx(q.peer)];
  q.link = head;
  head = pos;
  ++s.unmatched;
}

// One chain per source from the rank's one chain, each still newest first.
void Simulator::spread_unmatched(RankState& s) {
  std::vector<std::uint32_t> oldest_first;
  for (std::uint32_t p = s.unmatched_head; p != kNone; p = s.recvs.at(p).link)
    oldest_first.push_back(p);
  std::reverse(oldest_first.begin(), oldest_first.end());
  s.unmatched_by_src.assign(ranks_.size(), kNone);
  for (const std::uint32_t p : oldest_first) {
    RecvEntry& q = s.recvs.at(p);
    q.link = s.unmatched_by_src[idx(q.peer)];
    s.unmatched_by_src[idx(q.peer)] = p;
  }
  s.unmatched_head = kNone;
}

// The oldest receive of `dst` that a send from `src` with (seq, tag) matches, taken off
// its chain; kNone if there is none.
std::uint32_t Simulator::take_unmatched(int dst, int src, std::uint32_t seq, std::uint32_t tag) {
  RankState& s = ranks_[idx(dst)];
  if (s.unmatched == 0) return kNone;
  std::uint32_t& head = s.unmatched_by_src.empty() ? s.unmatched_head : s.unmatched_by_src[idx(src)];
  std::uint32_t match = kNone, before_match = kNone;
  for (std::uint32_t p = head, before = kNone; p != kNone;) {  // newest first: the last match
    const RecvEntry& q = s.recvs.at(p);
    if (q.peer == src && q.key.seq == seq && q.key.tag == tag) {
      match = p;
      before_match = before;
    }
    before = p;
    p = q.link;
  }
  if (match == kNone) return kNone;
  const std::uint32_t after = s.recvs.at(match).link;
  if (before_match == kNone) head = after;
  else s.recvs.at(before_match).link = after;
  if (--s.unmatched == 0 && !s.unmatched_by_src.empty()) std::vector<std::uint32_t>().swap(s.unmatched_by_src);
  return match;
}

std::uint32_t Simulator::new_id() {
  std::uint32_t id;
  if (free_ids_.empty()) {
    id = static_cast<std::uint32_t>(ids_.size());
    ids_.emplace_back();
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  ids_[id].refs = 2;  // its send's and its receive's waits
  return id;
}

// A wait on the transfer is over; once both are, its id can be handed out again.
void Simulator::release(std::uint32_t id) {
  if (--ids_[id].refs == 0) free_ids_.push_back(id);
}

std::uint32_t Simulator::new_transfer() {
  if (free_transfers_.empty()) {
    transfers_.emplace_back();
    return static_cast<std::uint32_t>(transfers_.size() - 1);
  }
  const std::uint32_t a = free_transfers_.back();
  free_transfers_.pop_back();
  transfers_[a] = Transfer{};
  return a;
}

void Simulator::free_transfer(std::uint32_t a) { free_transfers_.push_back(a); }

bool Simulator::wait(int r, const TraceEvent& e) {
  RankState& s = ranks_[idx(r)];
  if (e.request < s.pc) {
    // The usual ones first: this step's receive, the oldest send (the send window).
    if (!s.recvs.empty() && s.recvs.back().event == e.request && s.recvs.back().state != RecvEntry::waited)
      return wait_recv(r, s.recvs.back_position());
    if (!s.sends.empty() && s.sends.front().event == e.request)  // never waited: it would have left
      return wait_send(r, s.sends.front_position());
    const std::uint32_t recv = s.recvs.find(e.request);
    if (recv != kNone && s.recvs.at(recv).state != RecvEntry::waited) return wait_recv(r, recv);
    const std::uint32_t send = recv == kNone ? s.sends.find(e.request) : kNone;
    if (send != kNone && s.sends.at(send).id != kNone) return wait_send(r, send);
  }
  fail(r, "event " + std::to_string(s.pc) + " waits for event " + std::to_string(e.request) +
              ", which is no earlier send or receive still pending");
}

bool Simulator::wait_send(int r, std::uint32_t pos) {
  RankState& s = ranks_[idx(r)];
  SendEntry& p = s.sends.at(pos);
  if (p.left < 0) {  // still moving: sleep until it has left
    transfers_[ids_[p.id].record].send_waiter = r;
    return false;
  }
  s.clock = std::max(s.clock, p.left);
  release(p.id);
  p.id = kNone;
  while (!s.sends.empty() && s.sends.front().id == kNone) s.sends.pop_front();
  return true;
}

bool Simulator::wait_recv(int r, std::uint32_t pos) {
  RankState& s = ranks_[idx(r)];
  RecvEntry& q = s.recvs.at(pos);
  if (q.state == RecvEntry::unmatched) {  // not sent yet: sleep until it is
    q.waiting = true;
    return false;
  }
  if (q.state == RecvEntry::matched) {  // still moving: sleep until it has arrived
    transfers_[ids_[q.link].record].recv_waiter = r;
    return false;
  }
  s.clock = std::max(s.clock, q.arrival) + params(link_class(r, q.peer)).overhead;
  release(q.link);
  q.state = RecvEntry::waited;
  while (!s.recvs.empty() && s.recvs.front().state == RecvEntry::waited) s.recvs.pop_front();
  return true;
}

// A transfer moves once it heads both its ports' queues.
void Simulator::try_start(std::uint32_t a) {
  Transfer& t = transfers_[a];
  if (t.started || front(t.out) != a || front(t.in) != a) return;
  t.started = true;
  t.since = now_;
  t.paused = must_pause(t);
  const auto [x, y] = opposite(t);  // setting its rate changes no port
  t.both_ways = x != kNone || y != kNone;
  if (!t.paused) set_rate(a);
  refresh(x);
  refresh(y);
}

// Schedules the end of a moving transfer at its current rate.
void Simulator::set_rate(std::uint32_t a) {
  Transfer& t = transfers_[a];
  const std::uint32_t version = ++ids_[t.id].version;
  events_.push(now_ + (1 - t.done) * port_seconds(t), end_key(t.id, version));
}

// Re-rates a started transfer whose opposite direction may have started or stopped, or
// whose receiver may have started or stopped computing. A transfer that pauses or
// resumes changes what the transfers around it see.
void Simulator::refresh_moving(std::uint32_t a) {
  Transfer& t = transfers_[a];
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
  ++ids_[t.id].version;  // its end event, if any, is stale
  if (!t.paused) set_rate(a);
  if (moving_changed) refresh_around(t);
}

// The transfers whose opposite direction `t` is: those into its sender and out of its
// receiver.
void Simulator::refresh_around(const Transfer& t) {
  const auto [a, b] = opposite(t);
  refresh(a);
  refresh(b);
}

// Its last byte has left: the ports move on, and the times its ranks wait for go to
// their entries.
void Simulator::transfer_ends(std::uint32_t a) {
  Transfer& t = transfers_[a];
  t.left = now_;
  t.arrival = now_ + params(t.cls).link_delay;
  dequeue(t);
  refresh_around(t);
  if (front(t.out) != kNone) try_start(front(t.out));
  if (t.in != t.out && front(t.in) != kNone) try_start(front(t.in));
  ranks_[idx(t.src)].sends.at(t.send_pos).left = t.left;
  if (t.send_waiter >= 0) wake(t.send_waiter, std::max(ranks_[idx(t.send_waiter)].clock, t.left));
  if (t.recv_waiter >= 0)
    wake(t.recv_waiter, std::max(ranks_[idx(t.recv_waiter)].clock, t.arrival));
  if (t.recv_pos == kNone) return;  // no receive has taken it yet: it keeps its record
  RecvEntry& q = ranks_[idx(t.dst)].recvs.at(t.recv_pos);
  q.state = RecvEntry::arrived;
  q.arrival = t.arrival;
  ids_[t.id].record = kNone;
  free_transfer(a);
}

void Simulator::fail_peer(int r, const TraceEvent& e) const {
  fail(r, "event " + std::to_string(ranks_[idx(r)].pc) + " names peer " + std::to_string(e.peer) +
              " of " + std::to_string(ranks_.size()) + " ranks");
}

void Simulator::fail(int r, const std::string& what) const {
  throw RuntimeError("simulate: rank " + std::to_string(r) + ": " + what);
}

// Names the first rank that sleeps on a receive no send has come for.
std::string Simulator::describe_deadlock() {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    std::string found;
    Positions<RecvEntry>& recvs = ranks_[r].recvs;
    recvs.for_each([&](std::uint32_t pos, const RecvEntry& q) {
      if (!found.empty() || q.state != RecvEntry::unmatched || !q.waiting) return;
      std::uint32_t older = 0;  // the unmatched receives of its channel before it
      recvs.for_each([&](std::uint32_t p, const RecvEntry& o) {
        if (p < pos && o.state == RecvEntry::unmatched && o.peer == q.peer &&
            o.key.seq == q.key.seq && o.key.tag == q.key.tag)
          ++older;
      });
      found = "simulate: the traces cannot complete: rank " + std::to_string(r) +
              " waits for message " + std::to_string(older) + " from rank " +
              std::to_string(q.peer) + " (tag " + std::to_string(q.key.tag) + "), which is never sent";
    });
    if (!found.empty()) return found;
  }
  return "simulate: the traces cannot complete";
}

}  // namespace

std::vector<double> simulate_ranks(const std::vector<RankStream>& ranks,
                                   const std::vector<int>& node_of_rank, const Model& model,
                                   int threads) {
  return Simulator(ranks, node_of_rank, model, threads).run();
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
                  const Model& model, int threads) {
  return last_clock(simulate_ranks(ranks, node_of_rank, model, threads), node_of_rank, model) *
         1e6;
}

}  // namespace collscope
