// The time model without MPI: the model file, the trace byte form, the simulator on
// hand-built traces worked out by hand, and the textbook closed forms.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "collscope/runtime/algorithm.hpp"
#include "collscope/errors.hpp"
#include "collscope/model.hpp"
#include "../model/event_feed.hpp"
#include "../model/event_queue.hpp"
#include "../model/written_ranges.hpp"
#include "collscope/textbook_formulas.hpp"

namespace collscope {
namespace {

// ---- helpers -------------------------------------------------------------------------

// alpha 2 us, achieved bandwidth 1e9 B/s (2e9 x bwurate 0.5), reduce 4e9 B/s,
// start_lat 5 us, sync_lat 3 us; inter_node ten times slower in every term.
Model test_model() {
  Model m;
  m.intra_node = {2e9, 0.5, 2e-6, 5e-6, 3e-6};
  m.inter_node = {2e8, 0.5, 20e-6, 50e-6, 30e-6};
  m.reduce_rate = 4e9;
  return m;
}

// The trace allreduce_ring executes on rank r of n with blocks of b bytes (its order of
// posts and waits: collectives/allreduce/ring.cpp).
RankTrace ring_allreduce_trace(int r, int n, std::uint64_t b) {
  RankTrace t;
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int k = 0; k < n - 1; ++k) {
    const std::uint32_t in = t.recv(prev, b, 1), out = t.send(next, b, 1);
    t.wait(in);
    t.reduce(b);
    t.wait(out);
  }
  for (int k = 0; k < n - 1; ++k) {
    const std::uint32_t in = t.recv(prev, b, 2), out = t.send(next, b, 2);
    t.wait(in);
    t.wait(out);
  }
  return t;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const char* kValidModel = R"({
  "source": "hand", "fitted_on": {"host": "x"},
  "reduce_rate": 4e9,
  "intra_node": {"bandwidth": 2e9, "bwurate": 0.5, "link_delay": 2e-6, "start_lat": 5e-6,
                 "sync_lat": 3e-6},
  "inter_node": {"bwurate": 1, "link_delay": 0, "start_lat": 0, "sync_lat": 0, "bandwidth": 2e8}
})";

// The error of loading `text` (with `from` replaced by `to`), or "" when it loads.
std::string load_error(const std::string& from, const std::string& to) {
  std::string text = kValidModel;
  const std::size_t at = text.find(from);
  if (at == std::string::npos) return "test bug: '" + from + "' not in the model";
  text.replace(at, from.size(), to);
  try {
    load_model(write_temp("bad_model.json", text));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// ---- the model file ------------------------------------------------------------------

TEST(ModelFile, LoadsEveryParameter) {
  const Model m = load_model(write_temp("model.json", kValidModel));
  EXPECT_EQ(m.intra_node.bandwidth, 2e9);
  EXPECT_EQ(m.intra_node.bwurate, 0.5);
  EXPECT_EQ(m.intra_node.achieved_bandwidth(), 1e9);
  EXPECT_EQ(m.intra_node.link_delay, 2e-6);
  EXPECT_EQ(m.intra_node.start_lat, 5e-6);
  EXPECT_EQ(m.intra_node.sync_lat, 3e-6);
  EXPECT_EQ(m.inter_node.bandwidth, 2e8);
  EXPECT_EQ(m.reduce_rate, 4e9);
  EXPECT_EQ(m.copy_rate, 0);  // optional: copies are free
  EXPECT_EQ(m.source, "hand");
  EXPECT_EQ(m.fitted_on, R"({"host":"x"})");
}

TEST(ModelFile, TheExampleLoads) {
  const Model m = load_model(COLLSCOPE_SOURCE_DIR "/collectives/model/example.json");
  EXPECT_GT(m.intra_node.achieved_bandwidth(), m.inter_node.achieved_bandwidth());
  EXPECT_GT(m.copy_rate, 0);
}

TEST(ModelFile, EveryProblemIsOneLineNamingFileAndParameter) {
  const struct {
    std::string from, to, says;
  } cases[] = {
      {"\"bandwidth\": 2e9", "\"bandwidth\": -1", "intra_node.bandwidth must be positive"},
      {"\"bandwidth\": 2e9", "\"bandwidth\": 0", "intra_node.bandwidth must be positive"},
      {"\"bandwidth\": 2e9, ", "", "missing parameter intra_node.bandwidth"},
      {"\"link_delay\": 2e-6", "\"link_delay\": \"2us\"", "intra_node.link_delay must be a number"},
      {"\"sync_lat\": 3e-6", "\"sync_lat\": true", "intra_node.sync_lat must be a number"},
      {"\"start_lat\": 5e-6", "\"start_lat\": -5e-6", "intra_node.start_lat must be non-negative"},
      {"\"bwurate\": 0.5", "\"bwurate\": 1.5", "intra_node.bwurate must be in (0, 1]"},
      {"\"bwurate\": 0.5", "\"bwurate\": 0", "intra_node.bwurate must be positive"},
      {"\"reduce_rate\": 4e9,", "", "missing parameter reduce_rate"},
      {"\"reduce_rate\": 4e9", "\"reduce_rate\": null", "reduce_rate must be a number"},
      {"\"inter_node\"", "\"nvlink\"", "unknown key or link class 'nvlink'"},
      {"\"link_delay\": 0", "\"latency\": 0", "unknown parameter in inter_node 'latency'"},
      {"\"reduce_rate\": 4e9", "\"reduce_rate\": 4e9,,", "not valid JSON"},
      {R"("inter_node": {"bwurate": 1, "link_delay": 0, "start_lat": 0, "sync_lat": 0, )"
       R"("bandwidth": 2e8})",
       R"("inter_node": 5)", "inter_node must be an object"},
  };
  for (const auto& c : cases) {
    const std::string error = load_error(c.from, c.to);
    EXPECT_NE(error.find("bad_model.json"), std::string::npos) << c.says << ": " << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.says << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(ModelFile, MissingFileAndMissingClass) {
  EXPECT_THROW(load_model("/nonexistent/model.json"), UsageError);
  EXPECT_THROW(load_model(::testing::TempDir()), UsageError);  // a directory
  try {
    parse_model(R"({"reduce_rate": 1, "intra_node": {"bandwidth": 1, "bwurate": 1,
                "link_delay": 0, "start_lat": 0, "sync_lat": 0}})", "m.json");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "model file 'm.json': missing link class inter_node");
  }
}

// ---- traces --------------------------------------------------------------------------

TEST(Trace, ByteFormRoundTrips) {
  RankTrace t;
  const std::uint32_t s = t.send(3, (std::uint64_t{1} << 40) + 5, 7, 0xfffffff0u);
  t.send(2, 9, 1, 0, /*from_input=*/true);
  const std::uint32_t r = t.recv(1, 0, 255, 2);
  t.reduce(12);
  t.copy(34);
  t.wait(r);
  t.wait(s);
  const std::vector<std::uint8_t> one = serialize_trace(t);
  const RankTrace back = parse_trace(one);
  ASSERT_EQ(back.events.size(), t.events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent &a = t.events[i], &b = back.events[i];
    EXPECT_TRUE(a.op == b.op && a.peer == b.peer && a.seq == b.seq && a.tag == b.tag &&
                a.request == b.request && a.bytes == b.bytes && a.from_input == b.from_input)
        << "event " << i;
  }
  EXPECT_TRUE(back.events[1].from_input && !back.events[0].from_input);
  // Two ranks gathered back to back, as MPI_Gatherv lays them out.
  std::vector<std::uint8_t> both = serialize_trace(RankTrace{});
  const int sizes[2] = {static_cast<int>(both.size()), static_cast<int>(one.size())};
  both.insert(both.end(), one.begin(), one.end());
  const std::vector<RankTrace> all = parse_traces(both, sizes);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(all[0].events.empty());
  EXPECT_EQ(all[1].events.size(), 7u);
}

// The written ranges behind from_input: merged when they overlap or meet end to end,
// kept apart across a gap and per buffer space; a range touches them when it shares a
// byte, not when it only meets one end.
TEST(Trace, WrittenRangesMergeAndAnswerOverlaps) {
  detail::WrittenRanges w;
  EXPECT_FALSE(w.touches({0, 0, 10}));
  w.add({0, 100, 200});
  w.add({0, 300, 400});  // a gap: two ranges
  EXPECT_TRUE(w.touches({0, 150, 160}));
  EXPECT_TRUE(w.touches({0, 199, 301}));
  EXPECT_FALSE(w.touches({0, 200, 300}));  // the gap exactly
  EXPECT_FALSE(w.touches({0, 0, 100}));    // ends where the first begins
  EXPECT_FALSE(w.touches({0, 400, 500}));
  EXPECT_FALSE(w.touches({1, 150, 160}));  // another buffer
  EXPECT_FALSE(w.touches({0, 150, 150}));  // empty
  w.add({0, 200, 300});  // fills the gap: one range 100-400
  EXPECT_TRUE(w.touches({0, 250, 251}));
  w.add({0, 50, 100});   // meets the front
  w.add({0, 390, 450});  // overlaps the back
  EXPECT_TRUE(w.touches({0, 50, 51}) && w.touches({0, 449, 450}));
  EXPECT_FALSE(w.touches({0, 0, 50}) || w.touches({0, 450, 460}));
  w.add({0, 0, 1000});   // swallows everything
  EXPECT_TRUE(w.touches({0, 999, 1000}));
  w.add({3, 10, 20});    // a space beyond the ones seen
  EXPECT_TRUE(w.touches({3, 19, 30}) && !w.touches({2, 10, 20}));
}

TEST(Trace, DamagedBytesAreRefused) {
  RankTrace t;
  t.send(1, 8, 0);
  std::vector<std::uint8_t> bytes = serialize_trace(t);
  EXPECT_THROW(parse_trace(std::span(bytes).first(bytes.size() - 1)), RuntimeError);
  bytes.back() = 2;  // the flags byte: only bit 0 means something
  EXPECT_THROW(parse_trace(bytes), RuntimeError);
  bytes.back() = 0;
  bytes[0] = 'X';
  EXPECT_THROW(parse_trace(bytes), RuntimeError);
}

// ---- the simulator -------------------------------------------------------------------

// The textbook figure, N = 4, D = 4,000,000 B, so one block is B = 1,000,000 B:
//   start_lat                      5 us
//   2(N-1) x (alpha + B / bw)      6 x (2 us + 1e6 B / 1e9 B/s = 1000 us) = 6012 us
//   (N-1) x B / reduce_rate        3 x 1e6 B / 4e9 B/s = 3 x 250 us       =  750 us
//   sync_lat                       3 us
//   total                                                                 = 6770 us
TEST(Simulator, RingAllreduceIsTheTextbookFigure) {
  std::vector<RankTrace> traces;
  for (int r = 0; r < 4; ++r) traces.push_back(ring_allreduce_trace(r, 4, 1'000'000));
  EXPECT_NEAR(predict_us(traces, {0, 0, 0, 0}, test_model()), 6770.0, 1e-6);
  for (double t : simulate_ranks(traces, {0, 0, 0, 0}, test_model()))
    EXPECT_NEAR(t * 1e6, 6767.0, 1e-6);  // without sync_lat
}

// Ping-pong of 1000 B: 5 + 2 x (2 + 1) + 3 = 14 us on one node; across two nodes the
// inter_node terms: 50 + 2 x (20 + 1000 B / 1e8 B/s = 10) + 30 = 140 us.
TEST(Simulator, PingPongAndTheLinkClass) {
  std::vector<RankTrace> t(2);
  t[0].wait(t[0].send(1, 1000, 1));
  t[0].wait(t[0].recv(1, 1000, 2));
  t[1].wait(t[1].recv(0, 1000, 1));
  t[1].wait(t[1].send(0, 1000, 2));
  EXPECT_NEAR(predict_us(t, {0, 0}, test_model()), 14.0, 1e-9);
  EXPECT_NEAR(predict_us(t, {0, 1}, test_model()), 140.0, 1e-9);
}

// A zero-byte signal costs link_delay only: 5 + 2 + 3 = 10 us, on both ranks.
TEST(Simulator, SignalsCostLinkDelay) {
  std::vector<RankTrace> t(2);
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t in = t[r].recv(1 - r, 0, 0), out = t[r].send(1 - r, 0, 0);
    t[r].wait(in);
    t[r].wait(out);
  }
  EXPECT_NEAR(predict_us(t, {0, 0}, test_model()), 10.0, 1e-9);
}

// One rank sends 1 MB to two others at once: its port sends them one after the other.
// Rank 1: 5 + 1000 + 2 = 1007 us, rank 2: 5 + 2000 + 2 = 2007 us; the sender is done when
// its last byte left: 2005 us.
TEST(Simulator, ASendersPortSerialisesItsSends) {
  std::vector<RankTrace> t(3);
  const std::uint32_t a = t[0].send(1, 1'000'000, 0), b = t[0].send(2, 1'000'000, 0);
  t[0].wait(a);
  t[0].wait(b);
  t[1].wait(t[1].recv(0, 1'000'000, 0));
  t[2].wait(t[2].recv(0, 1'000'000, 0));
  const std::vector<double> f = simulate_ranks(t, {0, 0, 0}, test_model());
  EXPECT_NEAR(f[0] * 1e6, 2005.0, 1e-6);
  EXPECT_NEAR(f[1] * 1e6, 1007.0, 1e-6);
  EXPECT_NEAR(f[2] * 1e6, 2007.0, 1e-6);
}

// Two ranks send 1 MB to rank 0 at once: its ingress port takes them one after the
// other (rank 1 first: same post time, lower rank): 5 + 2000 + 2 = 2007 us.
TEST(Simulator, AReceiversPortSerialisesItsArrivals) {
  std::vector<RankTrace> t(3);
  const std::uint32_t a = t[0].recv(1, 1'000'000, 0), b = t[0].recv(2, 1'000'000, 0);
  t[0].wait(b);
  t[0].wait(a);
  t[1].wait(t[1].send(0, 1'000'000, 0));
  t[2].wait(t[2].send(0, 1'000'000, 0));
  const std::vector<double> f = simulate_ranks(t, {0, 0, 0}, test_model());
  EXPECT_NEAR(f[0] * 1e6, 2007.0, 1e-6);
  EXPECT_NEAR(f[1] * 1e6, 1005.0, 1e-6);
  EXPECT_NEAR(f[2] * 1e6, 2005.0, 1e-6);
}

// The receiver waits before the sender posts (after reducing 4 MB: 1000 us): it sleeps
// until the message arrives at 5 + 1000 + 1 + 2 = 1008 us. Messages match by tag: the
// receive for tag 2, posted first, gets the second send.
TEST(Simulator, AWaitBlocksUntilTheMatchingSendArrives) {
  std::vector<RankTrace> t(2);
  t[0].reduce(4'000'000);
  const std::uint32_t s1 = t[0].send(1, 1000, 1), s2 = t[0].send(1, 0, 2);
  t[0].wait(s1);
  t[0].wait(s2);
  const std::uint32_t r2 = t[1].recv(0, 0, 2), r1 = t[1].recv(0, 1000, 1);
  t[1].wait(r1);
  t[1].wait(r2);
  const std::vector<double> f = simulate_ranks(t, {0, 0}, test_model());
  EXPECT_NEAR(f[1] * 1e6, 1008.0, 1e-6);  // both arrive by then (the signal at 1008 too)
  EXPECT_NEAR(f[0] * 1e6, 1006.0, 1e-6);
}

TEST(Simulator, CopiesCostCopyRateWhenGiven) {
  std::vector<RankTrace> t(1);
  t[0].copy(1'000'000);
  Model m = test_model();
  EXPECT_NEAR(predict_us(t, {0}, m), 8.0, 1e-9);  // free
  m.copy_rate = 1e10;
  EXPECT_NEAR(predict_us(t, {0}, m), 108.0, 1e-9);  // + 100 us
}

TEST(Simulator, ImpossibleTracesAreRefused) {
  std::vector<RankTrace> t(2);
  t[0].wait(t[0].recv(1, 8, 0));  // rank 1 never sends
  EXPECT_THROW(simulate(t, {0, 0}, test_model()), RuntimeError);
  try {
    simulate(t, {0, 0}, test_model());
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 waits for message 0 from rank 1"),
              std::string::npos)
        << e.what();
  }
  std::vector<RankTrace> u(1);
  u[0].wait(0);  // waits for itself
  EXPECT_THROW(simulate(u, {0}, test_model()), RuntimeError);
  std::vector<RankTrace> v(1);
  v[0].send(5, 8, 0);  // no such peer
  EXPECT_THROW(simulate(v, {0}, test_model()), RuntimeError);
  EXPECT_THROW(simulate(t, {0}, test_model()), std::invalid_argument);
}

// Sends and receives match in posting order per (source, destination, seq, tag), however
// many receives wait: rank 0 posts k receives from each of ranks 1..4 on one tag, and
// each sender sends k messages, the first 8 bytes, the others 10 MB (10 ms each). Rank 0
// waits only for its first receive from rank 4, which is the small message if matching
// is first come first served: 5 (start) + 2 (alpha) + 0.008 us, not 10 ms later. With
// k = 2 the receives wait in one chain; with k = 8 (32 of them), one per source.
TEST(Simulator, ReceivesMatchInPostingOrderPerChannel) {
  for (const int k : {2, 8}) {
    std::vector<RankTrace> t(5);
    std::uint32_t first_from_4 = 0;
    for (int s = 1; s <= 4; ++s)
      for (int i = 0; i < k; ++i) {
        const std::uint32_t id = t[0].recv(s, i == 0 ? 8 : 10'000'000, 7);
        if (s == 4 && i == 0) first_from_4 = id;
      }
    t[0].wait(first_from_4);
    for (int s = 1; s <= 4; ++s)
      for (int i = 0; i < k; ++i) t[s].wait(t[s].send(0, i == 0 ? 8 : 10'000'000, 7));
    const std::vector<double> f = simulate_ranks(t, {0, 0, 0, 0, 0}, test_model());
    // Ranks 1..3's first messages queue ahead on rank 0's ingress port (8 ns each).
    EXPECT_NEAR(f[0] * 1e6, 7.032, 1e-6) << "k = " << k;
  }
}

// ---- the event queue -----------------------------------------------------------------

// The simulator's queue takes entries out in (time, key) order, as a binary heap over
// every entry would: many entries at few times (the common case), pushes behind and
// ahead of the ones taken, pushes at the time being taken with a smaller key.
TEST(EventQueue, TakesEntriesInTimeThenKeyOrder) {
  using Entry = std::pair<double, std::uint64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> want;
  detail::EventQueue got;
  std::mt19937_64 rng(7);
  double now = 0;
  std::size_t taken = 0;
  for (int round = 0; round < 20000; ++round) {
    const int pushes = static_cast<int>(rng() % 4);
    for (int i = 0; i < pushes; ++i) {
      // Times a few steps ahead (ties) or anywhere ahead; keys anywhere.
      const double time = rng() % 8 == 0 ? now + static_cast<double>(rng() % 100000) * 1e-9
                                         : now + static_cast<double>(rng() % 3) * 0.5;
      const std::uint64_t key = rng() % 64;
      want.emplace(time, key);
      got.push(time, key);
    }
    if (rng() % 3 == 0 || want.empty()) continue;
    ASSERT_FALSE(got.empty());
    const detail::EventQueue::Entry top = got.top();
    ASSERT_EQ(top.time, want.top().first) << "entry " << taken;
    ASSERT_EQ(top.key, want.top().second) << "entry " << taken;
    now = top.time;
    got.pop();
    want.pop();
    ++taken;
  }
  while (!want.empty()) {
    ASSERT_EQ(got.top().time, want.top().first);
    ASSERT_EQ(got.top().key, want.top().second);
    got.pop();
    want.pop();
  }
  EXPECT_TRUE(got.empty());
  EXPECT_GT(taken, 10000u);
}

// ---- the pages of events -------------------------------------------------------------

// `steps` steps of `per_step` sends each, the tag numbering the events.
class StepsOf final : public EventSource {
 public:
  StepsOf(int steps, int per_step) : steps_(steps), per_step_(per_step) {}
  bool fill(std::vector<TraceEvent>& out) override {
    if (done_ == steps_) return false;
    for (int i = 0; i < per_step_; ++i)
      out.push_back({.op = TraceOp::send, .peer = 1, .tag = tag_++, .bytes = 8});
    ++done_;
    return true;
  }

 private:
  int steps_, per_step_, done_ = 0;
  std::uint32_t tag_ = 0;
};

// A rank's events reach the simulator in order, a page at a time. A top-up reads whole
// steps while the next (if as long as the last) still fits a page of 64: steps of 5
// events make pages of 60, not pages of 64 each followed by a sliver of 1.
TEST(RankFeeds, RegularStepsFillWholePages) {
  StepsOf source(100, 5);
  EventSource* sources[] = {&source};
  detail::RankFeeds feeds(sources, /*helper=*/false);
  std::vector<std::uint32_t> sizes;
  std::uint32_t tag = 0;
  while (detail::Page* page = feeds.next(0)) {
    ASSERT_EQ(page->period, 0) << "a batch of a page is not searched for runs";
    sizes.push_back(page->size);
    detail::PageReader reader;
    ASSERT_TRUE(reader.start(page));
    for (const TraceEvent* e = reader.first(); e != reader.last(); ++e) ASSERT_EQ(e->tag, tag++);
    EXPECT_FALSE(reader.more());
  }
  EXPECT_EQ(tag, 500u);
  EXPECT_EQ(sizes, (std::vector<std::uint32_t>{60, 60, 60, 60, 60, 60, 60, 60, 20}));
}

// ---- the textbook formulas -----------------------------------------------------------

CollArgs floats(std::size_t count) {
  CollArgs a;
  a.count = count;
  return a;
}

TEST(TextbookFormulas, Values) {
  const CollArgs mib = floats(1 << 18);  // D = 1 MiB
  const double d = 1 << 20;
  EXPECT_EQ(*textbook_sent_bytes("allreduce", "ring", 8, mib), 1.75 * d);
  EXPECT_EQ(*textbook_sent_bytes("allreduce", "tree", 8, mib), 2 * d);
  EXPECT_EQ(*textbook_sent_bytes("allreduce", "dbt", 8, mib), d);
  EXPECT_EQ(*textbook_sent_bytes("allreduce", "direct", 8, mib), 14 * d);
  EXPECT_EQ(*textbook_sent_bytes("allreduce", "halving_doubling", 4, mib), 1.5 * d);
  EXPECT_EQ(*textbook_sent_bytes("reduce_scatter", "ring", 4, mib), 0.75 * d);
  EXPECT_EQ(*textbook_sent_bytes("allgather", "bruck", 8, mib), 0.875 * d);
  EXPECT_EQ(*textbook_sent_bytes("scatter", "linear", 4, mib), 0.75 * d);
  // all-to-all: count is per peer, D = N x count x 4 B = 4 x 1000 x 4 = 16000 B.
  EXPECT_EQ(*textbook_sent_bytes("alltoall", "pairwise", 4, floats(1000)), 12000.0);
  EXPECT_EQ(*textbook_sent_bytes("alltoall", "ring", 4, floats(1000)), 12000.0);
  // Bruck: D/2 per round, ceil(log2 6) = 3 rounds at N = 6: D = 24000, 3 x 12000.
  EXPECT_EQ(*textbook_sent_bytes("alltoall", "bruck", 6, floats(1000)), 36000.0);
  EXPECT_EQ(*textbook_formula_text("allreduce", "ring"), "2(N-1)/N x D");
  EXPECT_EQ(*textbook_formula_text("alltoall", "bruck"), "ceil(log2 N) x D/2");
}

TEST(TextbookFormulas, NoneWhereTheTextbookHasNone) {
  for (auto [c, a] : {std::pair{"broadcast", "binomial"}, {"reduce", "binomial"},
                      {"gather", "linear"}, {"barrier", "dissemination"},
                      {"alltoallv", "pairwise"}, {"allreduce", "mpi"}, {"nope", "ring"}}) {
    EXPECT_FALSE(textbook_sent_bytes(c, a, 4, floats(100))) << c << "/" << a;
    EXPECT_FALSE(textbook_formula_text(c, a)) << c << "/" << a;
  }
}

TEST(TextbookFormulas, EveryEntryNamesAHandWrittenAlgorithm) {
  for (const TextbookFormula& f : all_textbook_formulas()) {
    const Algorithm* algo = find_algorithm(f.collective, f.algorithm);
    ASSERT_NE(algo, nullptr) << f.collective << "/" << f.algorithm;
    EXPECT_FALSE(algo->is_vendor());
    EXPECT_FALSE(f.source.empty());
  }
}

}  // namespace
}  // namespace collscope
