#include "event_feed.hpp"

#include <algorithm>
#include <system_error>

namespace collscope::detail {

namespace {

// A rank's queue is topped up while it holds fewer events than this; a top-up reads
// steps until they fill a page (fill). Batches above kRunsAbove are looked at for runs
// (a ring step's few events are not worth the search).
constexpr std::uint64_t kTarget = 128;
constexpr std::size_t kRunsAbove = 256;

std::uint64_t events_in(const Page& p) {
  return p.period == 0 ? p.size : std::uint64_t{p.size} * p.period;
}

}  // namespace

// ---- PageReader ----------------------------------------------------------------------

bool PageReader::start(Page* page) {
  page_ = page;
  if (page->period == 0) {
    first_ = page->events;
    last_ = first_ + page->size;
    return page->size > 0;
  }
  next_ = 0;
  total_ = events_in(*page);
  first_ = last_ = nullptr;
  return more();
}

bool PageReader::more() {
  if (page_ == nullptr || page_->period == 0 || next_ == total_) return false;
  const std::size_t p = page_->period;
  TraceEvent* out = page_->events + 2 * p;
  const std::uint64_t count = std::min<std::uint64_t>(kPageEvents - 2 * p, total_ - next_);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = next_ + i;
    out[i] = feed_detail::advanced(page_->events[at % p], page_->events[p + at % p], at / p);
  }
  next_ += count;
  first_ = out;
  last_ = out + count;
  return true;
}

// ---- RankFeeds -----------------------------------------------------------------------

// One rank's queue: pages are linked after `tail` by whoever holds `busy`; the reader
// follows `head`, the page it read last, whose successor is its next. The writers' and
// the reader's members sit on cache lines of their own.
struct RankFeeds::Feed {
  alignas(64) std::atomic<bool> busy{false};  // someone computes its events
  Page* tail = nullptr;
  std::uint64_t produced = 0;  // events published
  bool ended = false;          // the end page is published
  alignas(64) Page* head = nullptr;  // the reader's
  std::uint64_t read = 0;            // events in the pages read to the end
  std::atomic<std::uint64_t> consumed{0};  // `read`, for the helper to see
};

namespace {

// The pages a thread keeps for itself before it gives them back to the helper.
constexpr std::size_t kReaderKeeps = 256;

}  // namespace

RankFeeds::RankFeeds(std::span<EventSource* const> sources, bool helper)
    : sources_(sources.begin(), sources.end()), feeds_(new Feed[sources.size()]) {
  pages_.push_back(std::make_unique<Page>());
  given_head_ = given_tail_ = pages_.back().get();
  for (std::size_t r = 0; r < sources_.size(); ++r)
    feeds_[r].head = feeds_[r].tail = new_page(reader_pool_);
  if (!helper || sources_.empty()) return;
  try {
    helper_ = std::thread([this] { help(); });
  } catch (const std::system_error&) {  // no thread to be had: the reader fills them
  }
}

RankFeeds::~RankFeeds() {
  if (!helper_.joinable()) return;
  stop_.store(true);
  wake_helper();
  helper_.join();
}

Page* RankFeeds::next(int r) {
  Feed& f = feeds_[static_cast<std::size_t>(r)];
  if (f.head->end) return nullptr;
  f.read += events_in(*f.head);
  f.consumed.store(f.read, std::memory_order_release);
  for (;;) {
    Page* page = f.head->next.load(std::memory_order_acquire);
    if (page != nullptr) {
      give_back(f.head);
      f.head = page;
      if (helper_.joinable()) wake_helper();  // a page less in this queue
      if (!page->end) return page;
      if (page->error) std::rethrow_exception(page->error);
      return nullptr;
    }
    // Empty: compute it here, unless the helper is at it right now.
    if (!f.busy.exchange(true, std::memory_order_acquire)) {
      if (f.head->next.load(std::memory_order_acquire) == nullptr) fill(static_cast<std::size_t>(r), reader_pool_);
      f.busy.store(false, std::memory_order_release);
    }
  }
}

// Whoever holds rank r's flag: reads steps of rank r until it has a batch, and
// publishes it.
void RankFeeds::fill(std::size_t r, Pool& pool) {
  Feed& f = feeds_[r];
  std::vector<TraceEvent>& batch = pool.batch;
  batch.clear();
  bool more = true;
  std::exception_ptr error;
  try {
    // Steps are read while the next, if as long as the last, still fits the page: a
    // regular schedule's batch fills one page rather than one and a sliver of another.
    for (std::size_t last = 0; batch.size() + std::max<std::size_t>(last, 1) <= kPageEvents;) {
      const std::size_t before = batch.size();
      if (!(more = sources_[r]->fill(batch))) break;
      last = batch.size() - before;
    }
  } catch (...) {
    error = std::current_exception();
    more = false;
  }
  pack_events(batch, batch.size() > kRunsAbove, [&] { return new_page(pool); },
              [&](Page* page) { publish(f, page); });
  if (more) return;
  Page* end = new_page(pool);
  end->end = true;
  end->error = error;
  publish(f, end);
  f.ended = true;
}

// The helper's: tops up rank r's queue if it runs low and nobody else is at it.
bool RankFeeds::top_up(std::size_t r) {
  Feed& f = feeds_[r];
  if (f.busy.load(std::memory_order_relaxed) || f.busy.exchange(true, std::memory_order_acquire))
    return false;
  const bool low = !f.ended && f.produced - f.consumed.load(std::memory_order_acquire) < kTarget;
  if (low) fill(r, helper_pool_);
  f.busy.store(false, std::memory_order_release);
  return low;
}

void RankFeeds::publish(Feed& f, Page* page) {
  f.produced += events_in(*page);
  f.tail->next.store(page, std::memory_order_release);
  f.tail = page;
}

Page* RankFeeds::new_page(Pool& pool) {
  Page* page = pool.free;
  if (page != nullptr) {
    pool.free = page->next.load(std::memory_order_relaxed);
    --pool.count;
  } else if (&pool != &helper_pool_ || (page = take_given_back()) == nullptr) {
    const std::lock_guard lock(pages_mutex_);
    pages_.push_back(std::make_unique<Page>());
    page = pages_.back().get();
  }
  page->next.store(nullptr, std::memory_order_relaxed);
  page->size = 0;
  page->period = 0;
  page->end = false;
  page->error = nullptr;
  return page;
}

// The reader's: a page read to the end. It keeps a few for its own top-ups; the rest go
// back to the helper.
void RankFeeds::give_back(Page* page) {
  if (!helper_.joinable() || reader_pool_.count < kReaderKeeps) {
    page->next.store(reader_pool_.free, std::memory_order_relaxed);
    reader_pool_.free = page;
    ++reader_pool_.count;
    return;
  }
  page->next.store(nullptr, std::memory_order_relaxed);
  given_tail_->next.store(page, std::memory_order_release);
  given_tail_ = page;
}

// The helper's: a page the reader gave back, or null. The queue's first page is handed
// out once its successor is there (the reader is done with it then).
Page* RankFeeds::take_given_back() {
  Page* after = given_head_->next.load(std::memory_order_acquire);
  if (after == nullptr) return nullptr;
  Page* page = given_head_;
  given_head_ = after;
  return page;
}

// The helper thread: sweeps the ranks, topping up every queue that runs low; sleeps when
// every queue is full until the reader takes a page.
void RankFeeds::help() {
  const std::size_t n = sources_.size();
  std::size_t r = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    const std::uint64_t ticket = demand_.load();
    bool did = false;
    for (std::size_t i = 0; i < n && !stop_.load(std::memory_order_relaxed); ++i) {
      did = top_up(r) || did;
      r = r + 1 == n ? 0 : r + 1;
    }
    if (did) continue;
    helper_idle_.store(true);
    if (demand_.load() == ticket && !stop_.load()) demand_.wait(ticket);
    helper_idle_.store(false);
  }
}

void RankFeeds::wake_helper() {
  demand_.fetch_add(1);
  if (helper_idle_.load()) demand_.notify_one();
}

}  // namespace collscope::detail
