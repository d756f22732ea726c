// Every rank's events, read ahead for the simulator in pages, by a second thread where
// the machine has a second core (MODEL.md, "Prediction at scale").
//
// Computing a rank's trace from its schedule (the sequencer, the written ranges) is as
// much work as simulating it, and the two split cleanly: a helper thread keeps every
// rank's queue topped up with a few pages while the simulator takes them. A page moves
// from the thread that computed it to the reader through an atomic link. Whoever
// computes a rank's next events holds that rank's flag: the helper, or the reader
// itself when it finds the queue empty (so on a machine whose second core is busy with
// other work, the reader never waits for the helper to be scheduled). The simulator gets
// the same events in the same order either way: only who computes them and when
// changes, never what it simulates.
//
// A large batch (a step of a direct all-reduce has 4 N events, and every rank holds
// one at once) is kept as runs: a few events repeated with the same increments to
// their fields (peers counting up, requests counting up, the same reduction over and
// over), which is what such steps are made of.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "collscope/model.hpp"

namespace collscope::detail {

inline constexpr std::size_t kPageEvents = 64;
inline constexpr std::size_t kMaxPeriod = 4;

// A page of one rank's events: `size` events as they are (period 0), or a run of
// `size` repetitions of `period` events: events[0, period) the first repetition,
// events[period, 2 period) what each repetition adds to each field (wrapping).
struct Page {
  std::atomic<Page*> next{nullptr};
  std::uint32_t size = 0;
  std::uint8_t period = 0;
  bool end = false;            // no more events after this page (it holds none)
  std::exception_ptr error;    // with `end`: computing the events failed so
  TraceEvent events[kPageEvents];
};

// Splits a batch of events into pages, runs where at least 16 events repeat with fixed
// increments, as they are elsewhere. `next_page` gives an empty page to write.
template <class NextPage, class Emit>
void pack_events(std::span<const TraceEvent> batch, bool find_runs, NextPage next_page, Emit emit);

// One page's events, a run decoded a part at a time into the page's free room.
class PageReader {
 public:
  // Points the reader at `page`; false if it holds no events.
  bool start(Page* page);
  // The events decoded so far and not read: [first, last).
  const TraceEvent* first() const { return first_; }
  const TraceEvent* last() const { return last_; }
  // Decodes the next part of a run; false once the page has no more.
  bool more();

 private:
  Page* page_ = nullptr;
  std::uint64_t next_ = 0;  // run: the index of the next event to decode
  std::uint64_t total_ = 0;
  const TraceEvent* first_ = nullptr;
  const TraceEvent* last_ = nullptr;
};

// The ranks' queues of pages and the helper thread that fills them.
class RankFeeds {
 public:
  // `helper`: fill the queues from a second thread too (else the reader fills them
  // itself, when one runs dry).
  RankFeeds(std::span<EventSource* const> sources, bool helper);
  ~RankFeeds();
  RankFeeds(const RankFeeds&) = delete;
  RankFeeds& operator=(const RankFeeds&) = delete;

  // Rank r's next page; the one it returned before goes back to the pool. Null once the
  // rank has no more events; rethrows what computing them threw.
  Page* next(int r);

 private:
  struct Feed;
  // Spare pages, per thread: what a thread reads to the end it keeps, up to a few, and
  // gives the helper the rest through a queue like a rank's.
  struct Pool {
    Page* free = nullptr;  // linked by `next`
    std::size_t count = 0;
    std::vector<TraceEvent> batch;
  };
  bool top_up(std::size_t r);
  void fill(std::size_t r, Pool& pool);
  void publish(Feed& f, Page* page);
  Page* new_page(Pool& pool);
  void give_back(Page* page);
  Page* take_given_back();
  void help();
  void wake_helper();

  std::vector<EventSource*> sources_;
  std::unique_ptr<Feed[]> feeds_;
  std::mutex pages_mutex_;
  std::vector<std::unique_ptr<Page>> pages_;  // every page made
  Pool reader_pool_, helper_pool_;
  // Pages given back to the helper; a queue with one writer (the reader) and one reader.
  Page* given_head_ = nullptr;  // the helper's end
  Page* given_tail_ = nullptr;  // the reader's end
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> demand_{0};  // bumped by the reader when the helper may act
  std::atomic<bool> helper_idle_{false};
  std::thread helper_;
};

// ---- pack_events ---------------------------------------------------------------------

namespace feed_detail {

// Field by field, b - a (wrapping), with a's op and flag: what one repetition adds.
inline TraceEvent difference(const TraceEvent& a, const TraceEvent& b) {
  TraceEvent d = a;
  d.peer = static_cast<int>(static_cast<std::uint32_t>(b.peer) - static_cast<std::uint32_t>(a.peer));
  d.seq = b.seq - a.seq;
  d.tag = b.tag - a.tag;
  d.request = b.request - a.request;
  d.bytes = b.bytes - a.bytes;
  return d;
}

// a + k d, field by field (wrapping).
inline TraceEvent advanced(const TraceEvent& a, const TraceEvent& d, std::uint64_t k) {
  TraceEvent e = a;
  e.peer = static_cast<int>(static_cast<std::uint32_t>(a.peer) +
                            static_cast<std::uint32_t>(k) * static_cast<std::uint32_t>(d.peer));
  e.seq = a.seq + static_cast<std::uint32_t>(k) * d.seq;
  e.tag = a.tag + static_cast<std::uint32_t>(k) * d.tag;
  e.request = a.request + static_cast<std::uint32_t>(k) * d.request;
  e.bytes = a.bytes + k * d.bytes;
  return e;
}

inline bool same(const TraceEvent& a, const TraceEvent& b) {
  return a.op == b.op && a.from_input == b.from_input && a.peer == b.peer && a.seq == b.seq &&
         a.tag == b.tag && a.request == b.request && a.bytes == b.bytes;
}

// How many repetitions of period p start at batch[i] (at least 2 to have increments).
inline std::size_t repetitions(std::span<const TraceEvent> batch, std::size_t i, std::size_t p) {
  if (i + 2 * p > batch.size()) return 0;
  TraceEvent d[kMaxPeriod];
  for (std::size_t j = 0; j < p; ++j) {
    const TraceEvent& a = batch[i + j];
    const TraceEvent& b = batch[i + p + j];
    if (a.op != b.op || a.from_input != b.from_input) return 0;
    d[j] = difference(a, b);
  }
  std::size_t reps = 2;
  while (i + (reps + 1) * p <= batch.size()) {
    for (std::size_t j = 0; j < p; ++j)
      if (!same(batch[i + reps * p + j], advanced(batch[i + j], d[j], reps))) return reps;
    ++reps;
  }
  return reps;
}

}  // namespace feed_detail

template <class NextPage, class Emit>
void pack_events(std::span<const TraceEvent> batch, bool find_runs, NextPage next_page, Emit emit) {
  constexpr std::size_t kMinRun = 16;
  Page* raw = nullptr;
  auto flush = [&] {
    if (raw != nullptr) emit(raw);
    raw = nullptr;
  };
  for (std::size_t i = 0; i < batch.size();) {
    std::size_t best_p = 0, best_reps = 0;
    for (std::size_t p = 1; find_runs && p <= kMaxPeriod; ++p) {
      const std::size_t reps = feed_detail::repetitions(batch, i, p);
      if (reps * p > best_reps * best_p) best_p = p, best_reps = reps;
      if (best_reps * best_p == batch.size() - i) break;  // it covers the rest: none does better
    }
    if (best_reps * best_p >= kMinRun) {
      flush();
      Page* run = next_page();
      run->period = static_cast<std::uint8_t>(best_p);
      run->size = static_cast<std::uint32_t>(best_reps);
      for (std::size_t j = 0; j < best_p; ++j) {
        run->events[j] = batch[i + j];
        run->events[best_p + j] = feed_detail::difference(batch[i + j], batch[i + best_p + j]);
      }
      emit(run);
      i += best_reps * best_p;
      continue;
    }
    if (raw == nullptr) {
      raw = next_page();
      raw->period = 0;
      raw->size = 0;
    }
    raw->events[raw->size++] = batch[i++];
    if (raw->size == kPageEvents) flush();
  }
  flush();
}

}  // namespace collscope::detail
