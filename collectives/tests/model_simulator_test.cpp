// The simulator's version-2 costs on hand-built traces, worked out by hand (MODEL.md,
// "The simulator"): per-message overhead on the posting / completing rank, port time by
// size, both-ways rates that change when the opposite direction starts or stops, and
// reductions and copies by size.
#include <gtest/gtest.h>

#include <vector>

#include "collscope/model.hpp"
#include "test_model.hpp"

namespace collscope {
namespace {

using test::flat_model;

// 1 MB takes 1000 us one way and 2000 us both ways (every size at those rates).
Model duplex_model() {
  Model m = flat_model();
  m.intra_node.one_way = {{1e6}, {1000e-6}};
  m.intra_node.both_ways = {{1e6}, {2000e-6}};
  return m;
}

std::vector<RankTrace> ping_pong(std::uint64_t bytes) {
  std::vector<RankTrace> t(2);
  t[0].wait(t[0].send(1, bytes, 1));
  t[0].wait(t[0].recv(1, bytes, 2));
  t[1].wait(t[1].recv(0, bytes, 1));
  t[1].wait(t[1].send(0, bytes, 2));
  return t;
}

// Both ranks post a receive and a send to each other at once, then wait for both.
std::vector<RankTrace> exchange(std::uint64_t bytes) {
  std::vector<RankTrace> t(2);
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t in = t[r].recv(1 - r, bytes, 0), out = t[r].send(1 - r, bytes, 0);
    t[r].wait(in);
    t[r].wait(out);
  }
  return t;
}

// Ping-pong of 1000 B with overhead 0.5 us: each leg costs o (post) + 1 us + 2 us + o
// (completion): 5 + 2 x 4 + 3 = 16 us, against 14 us without.
TEST(SimulatorV2, OverheadIsPaidByThePosterAndTheCompleter) {
  Model m = flat_model();
  EXPECT_NEAR(predict_us(ping_pong(1000), {0, 0}, m), 14.0, 1e-9);
  m.intra_node.overhead = 0.5e-6;
  EXPECT_NEAR(predict_us(ping_pong(1000), {0, 0}, m), 16.0, 1e-9);
  m.inter_node.overhead = 10e-6;  // another class's overhead does not apply
  EXPECT_NEAR(predict_us(ping_pong(1000), {0, 0}, m), 16.0, 1e-9);
}

// A rank posting three signals back to back (to three ranks) pays o = 1 us before each:
// posted at 6, 7, 8 us, they arrive at 8, 9, 10 us, and each receiver pays o on top.
TEST(SimulatorV2, OverheadSerialisesOneRanksPosts) {
  Model m = flat_model();
  m.intra_node.overhead = 1e-6;
  std::vector<RankTrace> t(4);
  std::uint32_t s[3];
  for (int p = 1; p <= 3; ++p) s[p - 1] = t[0].send(p, 0, 0);
  for (std::uint32_t id : s) t[0].wait(id);
  for (int p = 1; p <= 3; ++p) t[p].wait(t[p].recv(0, 0, 0));
  const std::vector<double> f = simulate_ranks(t, {0, 0, 0, 0}, m);
  EXPECT_NEAR(f[0] * 1e6, 8.0, 1e-9);
  EXPECT_NEAR(f[1] * 1e6, 9.0, 1e-9);
  EXPECT_NEAR(f[2] * 1e6, 10.0, 1e-9);
  EXPECT_NEAR(f[3] * 1e6, 11.0, 1e-9);
}

// The port time comes from the size: 1 KB at 1 us and 1 MB at 500 us (2e9 B/s), so
// 500,500 B takes half-way: 1 + 0.5 x 499 = 250.5 us, and 2 MB (beyond) 1000 us.
TEST(SimulatorV2, PortTimeFollowsTheSize) {
  Model m = flat_model();
  m.intra_node.one_way = {{1e3, 1e6}, {1e-6, 500e-6}};
  EXPECT_NEAR(predict_us(ping_pong(500'500), {0, 0}, m), 5 + 2 * (250.5 + 2) + 3, 1e-6);
  EXPECT_NEAR(predict_us(ping_pong(2'000'000), {0, 0}, m), 5 + 2 * (1000 + 2) + 3, 1e-6);
  // inter_node keeps its constant bandwidth: 1000 B / 1e9 = 1 us a leg.
  EXPECT_NEAR(predict_us(ping_pong(1000), {0, 1}, m), 14.0, 1e-6);
}

// An exchange moves both messages at the both-ways rate at once: 5 + 2000 + 2 = 2007 us
// on each rank; a ping-pong moves them one way, one after the other: 5 + 2 x 1002 + 3.
TEST(SimulatorV2, AnExchangeGoesAtTheBothWaysRate) {
  const Model m = duplex_model();
  for (double f : simulate_ranks(exchange(1'000'000), {0, 0}, m)) EXPECT_NEAR(f * 1e6, 2007.0, 1e-6);
  EXPECT_NEAR(predict_us(ping_pong(1'000'000), {0, 0}, m), 2012.0, 1e-6);
  // Across nodes the ports are inter_node's (constant 1e9 B/s both ways): 1000 us.
  for (double f : simulate_ranks(exchange(1'000'000), {0, 1}, m)) EXPECT_NEAR(f * 1e6, 1007.0, 1e-6);
}

// A message from the caller's input goes at the input curves' rate, one way or both ways;
// every other message at the written bytes' (duplex_model: 1000 and 2000 us per MB).
// Input: 1 MB in 400 us one way, 800 us both ways.
TEST(SimulatorV2, AMessageFromTheInputGoesAtTheInputRate) {
  Model m = duplex_model();
  m.intra_node.one_way_input = {{1e6}, {400e-6}};
  m.intra_node.both_ways_input = {{1e6}, {800e-6}};
  // The ping from the input, the pong from where it landed: 5 + (402 + 1002) + 3.
  std::vector<RankTrace> t(2);
  t[0].wait(t[0].send(1, 1'000'000, 1, 0, /*from_input=*/true));
  t[0].wait(t[0].recv(1, 1'000'000, 2));
  t[1].wait(t[1].recv(0, 1'000'000, 1));
  t[1].wait(t[1].send(0, 1'000'000, 2));
  EXPECT_NEAR(predict_us(t, {0, 0}, m), 1412.0, 1e-6);
  // An exchange of input on both sides: 5 + 800 + 2; of written bytes: 5 + 2000 + 2.
  std::vector<RankTrace> x(2);
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t in = x[r].recv(1 - r, 1'000'000, 0);
    const std::uint32_t out = x[r].send(1 - r, 1'000'000, 0, 0, true);
    x[r].wait(in);
    x[r].wait(out);
  }
  for (double f : simulate_ranks(x, {0, 0}, m)) EXPECT_NEAR(f * 1e6, 807.0, 1e-6);
  for (double f : simulate_ranks(exchange(1'000'000), {0, 0}, m)) EXPECT_NEAR(f * 1e6, 2007.0, 1e-6);
}

// Rank 0 sends 1 MB at 5 us; rank 1 reduces 2 MB (500 us) first, then sends 1 MB back.
// 5-505: rank 0's message alone, one way: half of it. 505-1505: both move both ways: the
// other half of rank 0's, half of rank 1's. 1505-2005: rank 1's rest, one way again.
TEST(SimulatorV2, TheRateChangesWhenTheOppositeDirectionStartsOrStops) {
  std::vector<RankTrace> t(2);
  const std::uint32_t s0 = t[0].send(1, 1'000'000, 0), r0 = t[0].recv(1, 1'000'000, 0);
  t[0].wait(s0);
  t[0].wait(r0);
  t[1].reduce(2'000'000);
  const std::uint32_t r1 = t[1].recv(0, 1'000'000, 0), s1 = t[1].send(0, 1'000'000, 0);
  t[1].wait(r1);
  t[1].wait(s1);
  const std::vector<double> f = simulate_ranks(t, {0, 0}, duplex_model());
  EXPECT_NEAR(f[0] * 1e6, 2007.0, 1e-6);  // rank 1's message arrives 2005 + 2
  EXPECT_NEAR(f[1] * 1e6, 2005.0, 1e-6);  // its own send left at 2005
}

// A rank that receives from one peer and sends to another is busy both ways too (a ring):
// 3 ranks, each sends 1 MB to the next: every transfer at the both-ways rate.
TEST(SimulatorV2, ARingStepIsBothWaysForEveryRank) {
  std::vector<RankTrace> t(3);
  for (int r = 0; r < 3; ++r) {
    const std::uint32_t in = t[r].recv((r + 2) % 3, 1'000'000, 0);
    const std::uint32_t out = t[r].send((r + 1) % 3, 1'000'000, 0);
    t[r].wait(in);
    t[r].wait(out);
  }
  for (double f : simulate_ranks(t, {0, 0, 0}, duplex_model())) EXPECT_NEAR(f * 1e6, 2007.0, 1e-6);
}

// Reductions and copies cost their curve's time for their size.
TEST(SimulatorV2, ReduceAndCopyCostByTheirSize) {
  Model m = flat_model();
  m.reduce_curve = {{1e3, 1e6}, {0.1e-6, 200e-6}};  // 10 GB/s in cache, 5 GB/s beyond
  m.copy_curve = {{1e6}, {50e-6}};
  const auto alone = [&](TraceOp op, std::uint64_t bytes) {
    std::vector<RankTrace> t(1);
    op == TraceOp::reduce ? t[0].reduce(bytes) : t[0].copy(bytes);
    return predict_us(t, {0}, m) - 8;  // less start_lat and sync_lat
  };
  EXPECT_NEAR(alone(TraceOp::reduce, 1000), 0.1, 1e-9);
  EXPECT_NEAR(alone(TraceOp::reduce, 2'000'000), 400, 1e-9);
  EXPECT_NEAR(alone(TraceOp::copy, 500'000), 25, 1e-9);
}

// The call's footprint: a rank that reduces 1000 B and 2 MB in one call reduces the small
// piece at the 2 MB rate too (0.2 us instead of 0.1): its data is not in cache either.
// Messages likewise: 16 pieces of 1 MB (the chain, the trees) at the 16 MB rate.
TEST(SimulatorV2, PiecesOfALargeCallGoAtTheFootprintsRate) {
  Model m = flat_model();
  m.reduce_curve = {{1e3, 1e6}, {0.1e-6, 200e-6}};
  std::vector<RankTrace> t(1);
  t[0].reduce(1000);
  t[0].reduce(2'000'000);
  EXPECT_NEAR(predict_us(t, {0}, m), 5 + 0.2 + 400 + 3, 1e-9);
  m.intra_node.one_way = {{1e6, 16e6}, {100e-6, 3200e-6}};  // 10 GB/s, 5 GB/s from memory
  std::vector<RankTrace> u(2);
  for (int k = 0; k < 16; ++k) {
    u[0].wait(u[0].send(1, 1'000'000, 0));
    u[1].wait(u[1].recv(0, 1'000'000, 0));
  }
  EXPECT_NEAR(simulate_ranks(u, {0, 0}, m)[1] * 1e6, 5 + 16 * 200 + 2, 1e-6);
  std::vector<RankTrace> one(2);  // one piece alone: 100 us
  one[0].wait(one[0].send(1, 1'000'000, 0));
  one[1].wait(one[1].recv(0, 1'000'000, 0));
  EXPECT_NEAR(simulate_ranks(one, {0, 0}, m)[1] * 1e6, 5 + 100 + 2, 1e-6);
}

// Rank 1 posts its receive, then reduces 2 MB (500 us) before it waits. With the network
// moving the bytes, the message arrives while it reduces: 5 + 1000 + 2 = 1007 us. With
// the receiver's CPU moving them, it waits until the reduction is over: 505 + 1000 + 2.
TEST(SimulatorV2, AReceiverMovedTransferPausesWhileTheReceiverComputes) {
  std::vector<RankTrace> t(2);
  t[0].wait(t[0].send(1, 1'000'000, 0));
  const std::uint32_t r = t[1].recv(0, 1'000'000, 0);
  t[1].reduce(2'000'000);
  t[1].wait(r);
  Model m = duplex_model();
  std::vector<double> f = simulate_ranks(t, {0, 0}, m);
  EXPECT_NEAR(f[1] * 1e6, 1007.0, 1e-6);
  EXPECT_NEAR(f[0] * 1e6, 1005.0, 1e-6);
  m.intra_node.moved_by = MovedBy::receiver;
  f = simulate_ranks(t, {0, 0}, m);
  EXPECT_NEAR(f[1] * 1e6, 1507.0, 1e-6);
  EXPECT_NEAR(f[0] * 1e6, 1505.0, 1e-6);  // its send leaves when the receiver took it
  // A rank computing does not hold up what it sends: rank 0 reduces after posting.
  std::vector<RankTrace> u(2);
  const std::uint32_t s = u[0].send(1, 1'000'000, 0);
  u[0].reduce(2'000'000);
  u[0].wait(s);
  u[1].wait(u[1].recv(0, 1'000'000, 0));
  EXPECT_NEAR(simulate_ranks(u, {0, 0}, m)[1] * 1e6, 1007.0, 1e-6);
}

// A zero-byte signal behind a long transfer on the same port waits for it (first come,
// first served), as in version 1.
TEST(SimulatorV2, ASignalQueuesBehindATransfer) {
  std::vector<RankTrace> t(2);
  const std::uint32_t a = t[0].send(1, 1'000'000, 1), b = t[0].send(1, 0, 2);
  t[0].wait(a);
  t[0].wait(b);
  const std::uint32_t rb = t[1].recv(0, 0, 2), ra = t[1].recv(0, 1'000'000, 1);
  t[1].wait(rb);
  t[1].wait(ra);
  const std::vector<double> f = simulate_ranks(t, {0, 0}, duplex_model());
  EXPECT_NEAR(f[1] * 1e6, 1007.0, 1e-6);
  EXPECT_NEAR(f[0] * 1e6, 1005.0, 1e-6);
}

// A rank's concurrent sends share its port (its NIC) per link class: rank 0 sends 1 MB to
// ranks 1 and 2 on another node at once; they go one after the other on its inter_node
// port (5 + 1000 + 1000 + 2 for the second), while a send to rank 3 on its own node
// goes at the same time on the intra_node port (5 + 1000 + 2).
TEST(SimulatorV2, ARanksConcurrentSendsShareItsPortPerClass) {
  std::vector<RankTrace> t(4);
  const std::uint32_t a = t[0].send(1, 1'000'000, 0), b = t[0].send(2, 1'000'000, 0),
                      c = t[0].send(3, 1'000'000, 0);
  t[0].wait(a);
  t[0].wait(b);
  t[0].wait(c);
  for (int r = 1; r < 4; ++r) t[r].wait(t[r].recv(0, 1'000'000, 0));
  Model m = duplex_model();
  m.inter_node = m.intra_node;
  const std::vector<double> f = simulate_ranks(t, {0, 1, 1, 0}, m);
  EXPECT_NEAR(f[1] * 1e6, 1007.0, 1e-6);
  EXPECT_NEAR(f[2] * 1e6, 2007.0, 1e-6);
  EXPECT_NEAR(f[3] * 1e6, 1007.0, 1e-6);
  EXPECT_NEAR(f[0] * 1e6, 2005.0, 1e-6);
}

// Each rank's messages in `sends` ({from, to}), 1 MB each, posted at once; every
// receiver waits for what it gets, every sender for what it sent.
std::vector<RankTrace> concurrent(int nranks, const std::vector<std::pair<int, int>>& sends) {
  std::vector<RankTrace> t(static_cast<std::size_t>(nranks));
  std::vector<std::vector<std::uint32_t>> pending(t.size());
  for (const auto& [from, to] : sends) {
    const auto src = static_cast<std::size_t>(from), dst = static_cast<std::size_t>(to);
    pending[dst].push_back(t[dst].recv(from, 1'000'000, 0));
    pending[src].push_back(t[src].send(to, 1'000'000, 0));
  }
  for (std::size_t r = 0; r < t.size(); ++r)
    for (const std::uint32_t id : pending[r]) t[r].wait(id);
  return t;
}

// duplex_model's costs between nodes too, with their links as given.
Model links_model(Links links) {
  Model m = duplex_model();
  m.inter_node = m.intra_node;
  m.inter_node.links = links;
  return m;
}

// Each rank's finish in us with links_model(links).
std::vector<double> finish_us(const std::vector<RankTrace>& t, const std::vector<int>& nodes,
                              Links links) {
  std::vector<double> f = simulate_ranks(t, nodes, links_model(links));
  for (double& x : f) x *= 1e6;
  return f;
}

// Links per node pair: rank 0 sending 1 MB to two other nodes at once uses two links
// (both at 5 + 1000 + 2), where its own port would send them one after the other.
TEST(SimulatorV2, ANodePairLinkPerDestinationNode) {
  const std::vector<RankTrace> t = concurrent(3, {{0, 1}, {0, 2}});
  std::vector<double> f = finish_us(t, {0, 1, 2}, Links::per_node_pair);
  EXPECT_NEAR(f[1], 1007.0, 1e-6);
  EXPECT_NEAR(f[2], 1007.0, 1e-6);
  f = finish_us(t, {0, 1, 2}, Links::per_rank);
  EXPECT_NEAR(f[2], 2007.0, 1e-6);
}

// Two ranks of node 0 sending to two ranks of node 1 share the one link from node 0 to
// node 1 (the second ends at 5 + 2000 + 2), where a port per rank moves them at once.
// Within a node nothing changes: ranks keep their own intra_node ports.
TEST(SimulatorV2, RanksOfANodeShareItsLinkToAnotherNode) {
  const std::vector<RankTrace> t = concurrent(4, {{0, 2}, {1, 3}});
  std::vector<double> f = finish_us(t, {0, 0, 1, 1}, Links::per_node_pair);
  EXPECT_NEAR(f[2], 1007.0, 1e-6);
  EXPECT_NEAR(f[3], 2007.0, 1e-6);
  // One node: intra_node, a port per rank.
  f = finish_us(t, {0, 0, 0, 0}, Links::per_node_pair);
  EXPECT_NEAR(f[3], 1007.0, 1e-6);
  f = finish_us(t, {0, 0, 1, 1}, Links::per_rank);
  EXPECT_NEAR(f[3], 1007.0, 1e-6);
}

// The opposite direction of a node-pair link is the link back: rank 0 sending to rank 2
// while rank 3 sends to rank 1 (other ranks, opposite nodes) goes both ways (2000 us);
// with a port per rank neither rank both sends and receives, so one way (1000 us).
TEST(SimulatorV2, ANodePairLinksOppositeDirectionIsTheLinkBack) {
  const std::vector<RankTrace> t = concurrent(4, {{0, 2}, {3, 1}});
  std::vector<double> f = finish_us(t, {0, 0, 1, 1}, Links::per_node_pair);
  EXPECT_NEAR(f[2], 2007.0, 1e-6);
  EXPECT_NEAR(f[1], 2007.0, 1e-6);
  f = finish_us(t, {0, 0, 1, 1}, Links::per_rank);
  EXPECT_NEAR(f[2], 1007.0, 1e-6);
}

// With moved_by receiver, a transfer on a node-pair link pauses while its receiver
// computes, and only that one: rank 1 reduces for 500 us, so 0 -> 1 arrives at
// 505 + 1000 + 2, while 0 -> 2 on another link is unaffected.
TEST(SimulatorV2, ANodePairTransferPausesForItsReceiverOnly) {
  std::vector<RankTrace> t = concurrent(3, {{0, 1}, {0, 2}});
  RankTrace busy;
  const std::uint32_t r = busy.recv(0, 1'000'000, 0);
  busy.reduce(2'000'000);
  busy.wait(r);
  t[1] = busy;
  Model m = links_model(Links::per_node_pair);
  m.inter_node.moved_by = MovedBy::receiver;
  const std::vector<double> f = simulate_ranks(t, {0, 1, 2}, m);
  EXPECT_NEAR(f[1] * 1e6, 1507.0, 1e-6);
  EXPECT_NEAR(f[2] * 1e6, 1007.0, 1e-6);
}

}  // namespace
}  // namespace collscope
