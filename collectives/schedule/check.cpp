#include "collscope/schedule_check.hpp"

#include "collscope/consumed_receives.hpp"

#include <map>
#include <span>
#include <sstream>
#include <tuple>
#include <vector>

namespace collscope {
namespace {

// One message as its sender or receiver saw it.
struct Message {
  int step = 0;
  std::size_t bytes = 0;
  bool signal = false;
  bool operator==(const Message&) const = default;
};
using Channel = std::tuple<int, int, std::uint32_t>;  // from, to, tag
using Messages = std::map<Channel, std::vector<Message>>;

std::string where(int rank, const Step& s) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(s.index) + " (" + s.phase + ")";
}

class RankChecker {
 public:
  // The call's send and receive buffers hold send_bytes and recv_bytes.
  RankChecker(Plan& plan, std::size_t send_bytes, std::size_t recv_bytes)
      : plan_(plan), send_bytes_(send_bytes), recv_bytes_(recv_bytes) {}

  // Walks the rank's schedule; collects its messages into `sent` and `received`.
  std::optional<std::string> run(Steps& steps, Messages& sent, Messages& received);

 private:
  Range range(BufRef ref, std::size_t bytes) const { return plan_.locate(ref, bytes); }
  std::optional<std::string> bounds(const Step& s, BufRef ref, std::size_t bytes) const;
  std::optional<std::string> step_hazards(const Step& s) const;
  std::optional<std::string> overlap_hazards(const Step& next) const;
  std::optional<std::string> consumed_reads(const Step& s);
  std::optional<std::string> read_of_consumed(const Step& s, const Range& r) const;
  void overwrite_consumed(const Range& r);
  std::size_t region_bytes(BufRef ref) const;

  Plan& plan_;
  std::size_t send_bytes_, recv_bytes_;
  std::vector<Range> kept_local_;  // ranges the last step's deferred local ops touch
  std::string kept_where_;
  // Received bytes a reduction consumed (consumed_receives.hpp), not yet overwritten:
  // nothing may read them.
  std::vector<Range> consumed_;
  std::vector<int> consumer_;
};

std::optional<std::string> RankChecker::read_of_consumed(const Step& s, const Range& r) const {
  for (const Range& c : consumed_)
    if (c.overlaps(r))
      return where(plan_.rank(), s) + ": reads received bytes that a reduction already consumed " +
             "(a path that reduces straight from the sender's memory never copies them)";
  return std::nullopt;
}

// What is written is no longer consumed: the parts of consumed ranges outside `r` stay.
void RankChecker::overwrite_consumed(const Range& r) {
  std::vector<Range> left;
  for (const Range& c : consumed_) {
    if (!c.overlaps(r)) {
      left.push_back(c);
      continue;
    }
    if (c.begin < r.begin) left.push_back({c.space, c.begin, r.begin});
    if (r.end < c.end) left.push_back({c.space, r.end, c.end});
  }
  consumed_ = std::move(left);
}

// The consumed rule, in the order a rank runs a step: its sends read, its receives
// write, then its local ops one by one; a consumed receive's bytes become unreadable
// once its reduce has run.
std::optional<std::string> RankChecker::consumed_reads(const Step& s) {
  for (const CommOp& op : s.comm)
    if (op.kind == CommKind::send)
      if (auto bad = read_of_consumed(s, range(op.buf, op.bytes))) return bad;
  for (const CommOp& op : s.comm)
    if (op.kind == CommKind::recv) overwrite_consumed(range(op.buf, op.bytes));
  consumed_receives(plan_, s, consumer_);
  for (std::size_t i = 0; i < s.local.size(); ++i) {
    const LocalOp& op = s.local[i];
    const BufRef first_input = op.kind == LocalKind::divide ? op.out : op.a;
    if (auto bad = read_of_consumed(s, range(first_input, op.bytes))) return bad;
    if (op.kind == LocalKind::reduce)
      if (auto bad = read_of_consumed(s, range(op.b, op.bytes))) return bad;
    overwrite_consumed(range(op.out, op.bytes));
    for (std::size_t c = 0; c < s.comm.size(); ++c)
      if (consumer_[c] == static_cast<int>(i)) consumed_.push_back(range(s.comm[c].buf, s.comm[c].bytes));
  }
  return std::nullopt;
}

std::size_t RankChecker::region_bytes(BufRef ref) const {
  switch (ref.region) {
    case Region::send: return send_bytes_;
    case Region::recv: return recv_bytes_;
    case Region::scratch:
      return ref.slot < plan_.scratch_sizes().size() ? plan_.scratch_sizes()[ref.slot] : 0;
  }
  return 0;
}

std::optional<std::string> RankChecker::bounds(const Step& s, BufRef ref, std::size_t bytes) const {
  if (bytes == 0 || ref.offset + bytes <= region_bytes(ref)) return std::nullopt;
  static const char* names[] = {"send", "recv", "scratch"};
  return where(plan_.rank(), s) + ": bytes [" + std::to_string(ref.offset) + ", " +
         std::to_string(ref.offset + bytes) + ") of the " + names[static_cast<int>(ref.region)] +
         " buffer (slot " + std::to_string(ref.slot) + "), which has " +
         std::to_string(region_bytes(ref)) + " B";
}

std::optional<std::string> RankChecker::step_hazards(const Step& s) const {
  std::vector<Range> recvs, sends;
  for (const CommOp& op : s.comm) (op.receives() ? recvs : sends).push_back(range(op.buf, op.bytes));
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    for (std::size_t j = i + 1; j < recvs.size(); ++j)
      if (recvs[i].overlaps(recvs[j])) return where(plan_.rank(), s) + ": two receives write the same bytes";
    for (const Range& snd : sends)
      if (recvs[i].overlaps(snd)) return where(plan_.rank(), s) + ": a receive writes bytes a send reads";
  }
  for (const LocalOp& op : s.local) {
    const Range out = range(op.out, op.bytes);
    for (const Range& snd : sends)
      if (out.overlaps(snd)) return where(plan_.rank(), s) + ": a local op writes bytes a send reads";
    const int inputs = op.kind == LocalKind::reduce ? 2 : 1;
    for (int i = 0; i < inputs; ++i) {
      const Range in = range(i == 0 ? op.a : op.b, op.bytes);
      if (in.overlaps(out) && !(in == out))
        return where(plan_.rank(), s) + ": a local op's output partly overlaps its input";
    }
  }
  return std::nullopt;
}

std::optional<std::string> RankChecker::overlap_hazards(const Step& next) const {
  for (const CommOp& op : next.comm) {
    if (!op.receives()) continue;
    const Range r = range(op.buf, op.bytes);
    for (const Range& kept : kept_local_)
      if (r.overlaps(kept))
        return kept_where_ + " overlaps its local ops with " + where(plan_.rank(), next) +
               ", whose receive writes bytes they use";
  }
  return std::nullopt;
}

std::optional<std::string> RankChecker::run(Steps& steps, Messages& sent, Messages& received) {
  bool first = true;
  while (steps.next()) {
    if (first) plan_.freeze();
    first = false;
    const Step& s = steps.value();
    if (s.empty()) continue;
    if (auto bad = overlap_hazards(s)) return bad;
    kept_local_.clear();
    for (const CommOp& op : s.comm) {
      if (op.peer < 0 || op.peer >= plan_.size() || op.peer == plan_.rank())
        return where(plan_.rank(), s) + ": a message names peer " + std::to_string(op.peer);
      if (auto bad = bounds(s, op.buf, op.bytes)) return bad;
      const bool signal = op.kind == CommKind::signal || op.kind == CommKind::wait_signal;
      const Message m{s.index, op.bytes, signal};
      if (op.receives()) received[{op.peer, plan_.rank(), op.tag}].push_back(m);
      else sent[{plan_.rank(), op.peer, op.tag}].push_back(m);
    }
    for (const LocalOp& op : s.local) {
      for (BufRef ref : {op.out, op.a})
        if (auto bad = bounds(s, ref, op.bytes)) return bad;
      if (op.kind == LocalKind::reduce)
        if (auto bad = bounds(s, op.b, op.bytes)) return bad;
    }
    if (auto bad = step_hazards(s)) return bad;
    if (auto bad = consumed_reads(s)) return bad;
    if (s.overlap_next) {
      for (const LocalOp& op : s.local) {
        kept_local_.push_back(range(op.out, op.bytes));
        kept_local_.push_back(range(op.a, op.bytes));
        if (op.kind == LocalKind::reduce) kept_local_.push_back(range(op.b, op.bytes));
      }
      kept_where_ = where(plan_.rank(), s);
    }
  }
  return std::nullopt;
}

std::string describe(const Channel& c) {
  return "the messages from rank " + std::to_string(std::get<0>(c)) + " to rank " +
         std::to_string(std::get<1>(c)) + " with tag " + std::to_string(std::get<2>(c));
}

std::string list(const std::vector<Message>& ms) {
  std::ostringstream s;
  for (std::size_t i = 0; i < ms.size() && i < 4; ++i)
    s << (i ? ", " : "") << (ms[i].signal ? "signal" : std::to_string(ms[i].bytes) + " B")
      << " in step " << ms[i].step;
  if (ms.size() > 4) s << ", ... (" << ms.size() << " in all)";
  return ms.empty() ? "none" : s.str();
}

std::optional<std::string> match(const Messages& sent, const Messages& received) {
  static const std::vector<Message> none;
  auto find = [&](const Messages& m, const Channel& c) -> const std::vector<Message>& {
    const auto it = m.find(c);
    return it == m.end() ? none : it->second;
  };
  for (const Messages* side : {&sent, &received})
    for (const auto& [channel, ignored] : *side) {
      const auto& s = find(sent, channel);
      const auto& r = find(received, channel);
      if (s != r) return describe(channel) + " do not match: sent " + list(s) + "; received " + list(r);
    }
  return std::nullopt;
}

// The first peer whose planned volume differs from the theory's, as one line.
std::optional<std::string> volume_difference(int rank, const std::vector<RankVolume>& planned,
                                             std::span<const RankVolume> theory) {
  for (std::size_t q = 0; q < planned.size(); ++q) {
    const RankVolume &p = planned[q], &t = theory[q];
    if (p == t) continue;
    return "rank " + std::to_string(rank) + " with rank " + std::to_string(q) + ": planned sent " +
           std::to_string(p.sent_bytes) + " B/" + std::to_string(p.sent_msgs) + " msgs, recv " +
           std::to_string(p.recv_bytes) + " B/" + std::to_string(p.recv_msgs) + "; theory sent " +
           std::to_string(t.sent_bytes) + " B/" + std::to_string(t.sent_msgs) + ", recv " +
           std::to_string(t.recv_bytes) + " B/" + std::to_string(t.recv_msgs);
  }
  return std::nullopt;
}

// One rank's call as the checker walks it: its plan and the sizes of its buffers.
struct RankCall {
  Plan plan;
  std::size_t send_bytes, recv_bytes;
};

// Every rank's schedule walked and checked, then the messages matched across ranks.
// call_of(r) gives rank r's RankCall, schedule(plan) its schedule.
template <class CallOf, class Schedule>
std::optional<std::string> check_ranks(int nranks, CallOf call_of, Schedule schedule) {
  Messages sent, received;
  for (int r = 0; r < nranks; ++r) {
    RankCall c = call_of(r);
    Steps steps = schedule(c.plan);
    RankChecker checker(c.plan, c.send_bytes, c.recv_bytes);
    if (auto bad = checker.run(steps, sent, received)) return bad;
  }
  return match(sent, received);
}

}  // namespace

std::optional<std::string> check_schedules(const Algorithm& algo, int nranks,
                                           const CollArgs& args, bool in_place) {
  const std::size_t elem = args.elem_size();
  auto call_of = [&](int r) {
    return RankCall{make_plan(algo, r, nranks, args, in_place),
                    algo.info().send_count(args, r, nranks) * elem,
                    algo.info().recv_count(args, r, nranks) * elem};
  };
  auto schedule = [&](Plan& plan) { return schedule_of(algo, plan); };
  if (auto bad = check_ranks(nranks, call_of, schedule)) return bad;
  for (int r = 0; r < nranks; ++r) {
    const std::vector<RankVolume> planned = planned_volume(algo, r, nranks, args, in_place);
    if (auto bad = volume_difference(r, planned, theory_per_peer(algo.theory, r, nranks, args)))
      return bad;
  }
  return std::nullopt;
}

std::optional<std::string> check_p2p_step(const P2pEntry& e, const P2pStep& step, int nranks,
                                          std::size_t bytes) {
  auto call_of = [&](int r) { return RankCall{p2p_plan(r, nranks, bytes), bytes, bytes}; };
  auto schedule = [&](Plan& plan) { return e.schedule(plan, step, "check"); };
  if (auto bad = check_ranks(nranks, call_of, schedule)) return bad;
  const std::vector<RankVolume> theory = e.theory(step, bytes, nranks);
  const std::size_t n = static_cast<std::size_t>(nranks);
  for (int r = 0; r < nranks; ++r) {
    const std::span<const RankVolume> row(theory.data() + static_cast<std::size_t>(r) * n, n);
    if (auto bad = volume_difference(r, planned_volume(e, step, r, nranks, bytes), row)) return bad;
  }
  return std::nullopt;
}

}  // namespace collscope
