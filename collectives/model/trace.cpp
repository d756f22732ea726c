// Per-rank traces: the builders the recorder and the tests use, and a byte form for
// gathering them (little-endian fields, so it does not depend on struct layout):
//   "CSTR" | version u32 | event count u64 | events: op u8, peer i32, seq u32, tag u32,
//   request u32, bytes u64, flags u8 (bit 0: from_input)
#include <algorithm>
#include <array>
#include <limits>

#include "collscope/errors.hpp"
#include "collscope/model.hpp"

namespace collscope {
namespace {

// A call at N = 4096 holds millions of events in flight: keep the flag in the padding.
static_assert(sizeof(TraceEvent) <= 32, "TraceEvent grew past 32 bytes");

constexpr std::array<std::uint8_t, 4> kMagic = {'C', 'S', 'T', 'R'};
constexpr std::uint32_t kVersion = 2;
constexpr std::size_t kHeaderBytes = 16;
constexpr std::size_t kEventBytes = 1 + 4 + 4 + 4 + 4 + 8 + 1;

template <class T>
void put(std::vector<std::uint8_t>& out, T value) {
  const auto u = static_cast<std::uint64_t>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<std::uint8_t>(u >> (8 * i)));
}

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    if (pos_ + sizeof(T) > bytes_.size()) throw RuntimeError("trace: truncated byte form");
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) u |= std::uint64_t{bytes_[pos_ + i]} << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(u);
  }
  std::size_t left() const { return bytes_.size() - pos_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

std::uint32_t next_index(const RankTrace& t) {
  if (t.events.size() >= std::numeric_limits<std::uint32_t>::max())
    throw RuntimeError("trace: too many events");
  return static_cast<std::uint32_t>(t.events.size());
}

}  // namespace

std::uint32_t RankTrace::send(int peer, std::uint64_t bytes, std::uint32_t tag,
                              std::uint32_t seq, bool from_input) {
  const std::uint32_t id = next_index(*this);
  events.push_back({.op = TraceOp::send, .from_input = from_input, .peer = peer, .seq = seq,
                    .tag = tag, .bytes = bytes});
  return id;
}

std::uint32_t RankTrace::recv(int peer, std::uint64_t bytes, std::uint32_t tag,
                              std::uint32_t seq) {
  const std::uint32_t id = next_index(*this);
  events.push_back({.op = TraceOp::recv, .peer = peer, .seq = seq, .tag = tag, .bytes = bytes});
  return id;
}

void RankTrace::wait(std::uint32_t request) {
  events.push_back({.op = TraceOp::wait, .request = request});
}

void RankTrace::reduce(std::uint64_t bytes) {
  events.push_back({.op = TraceOp::reduce, .bytes = bytes});
}

void RankTrace::copy(std::uint64_t bytes) {
  events.push_back({.op = TraceOp::copy, .bytes = bytes});
}

double TraceTotals::footprint() const {
  return static_cast<double>(std::max({sent_bytes, recv_bytes, reduced_bytes, copied_bytes}));
}

TraceTotals totals_of(const RankTrace& trace) {
  TraceTotals t;
  for (const TraceEvent& e : trace.events) t.add(e);
  return t;
}

std::vector<std::uint8_t> serialize_trace(const RankTrace& trace) {
  std::vector<std::uint8_t> out(kMagic.begin(), kMagic.end());
  out.reserve(kHeaderBytes + trace.events.size() * kEventBytes);
  put(out, kVersion);
  put(out, static_cast<std::uint64_t>(trace.events.size()));
  for (const TraceEvent& e : trace.events) {
    put(out, static_cast<std::uint8_t>(e.op));
    put(out, static_cast<std::uint32_t>(e.peer));
    put(out, e.seq);
    put(out, e.tag);
    put(out, e.request);
    put(out, e.bytes);
    put(out, static_cast<std::uint8_t>(e.from_input ? 1 : 0));
  }
  return out;
}

RankTrace parse_trace(std::span<const std::uint8_t> bytes) {
  ByteReader in(bytes);
  for (std::uint8_t m : kMagic)
    if (in.get<std::uint8_t>() != m) throw RuntimeError("trace: not a collscope trace");
  if (in.get<std::uint32_t>() != kVersion) throw RuntimeError("trace: unknown version");
  const auto count = in.get<std::uint64_t>();
  if (count > in.left() / kEventBytes) throw RuntimeError("trace: truncated byte form");
  RankTrace t;
  t.events.resize(static_cast<std::size_t>(count));
  for (TraceEvent& e : t.events) {
    const auto op = in.get<std::uint8_t>();
    if (op > static_cast<std::uint8_t>(TraceOp::copy)) throw RuntimeError("trace: bad event");
    e.op = static_cast<TraceOp>(op);
    e.peer = static_cast<int>(in.get<std::uint32_t>());
    e.seq = in.get<std::uint32_t>();
    e.tag = in.get<std::uint32_t>();
    e.request = in.get<std::uint32_t>();
    e.bytes = in.get<std::uint64_t>();
    const auto flags = in.get<std::uint8_t>();
    if (flags > 1) throw RuntimeError("trace: bad event flags");
    e.from_input = flags == 1;
  }
  if (in.left() != 0) throw RuntimeError("trace: trailing bytes");
  return t;
}

std::vector<RankTrace> parse_traces(std::span<const std::uint8_t> gathered,
                                    std::span<const int> sizes) {
  std::vector<RankTrace> out;
  std::size_t offset = 0;
  for (int size : sizes) {
    const auto n = static_cast<std::size_t>(size);
    if (size < 0 || offset + n > gathered.size()) throw RuntimeError("trace: bad sizes");
    out.push_back(parse_trace(gathered.subspan(offset, n)));
    offset += n;
  }
  return out;
}

}  // namespace collscope
