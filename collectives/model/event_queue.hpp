// The simulator's queue of things to happen, ordered by (time, key), least first.
//
// At scale almost every entry shares its time with many others (every rank of a ring
// step finishes its reduction at the same instant: at N = 1024, 99% of the entries taken
// out have the time of the one before), so a binary heap over all entries spends its
// comparisons on ties. Here entries of one time sit in a bucket, in key order, and only
// the buckets, one per distinct time, are in a heap: a push is an append to its bucket,
// a pop takes the bucket's next key. A bucket is sorted once, when its time comes (keys
// arrive in any order: ranks woken in the order their transfers end); only a push into
// the bucket being taken out finds its place at once.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "linear_probing.hpp"

namespace collscope::detail {

class EventQueue {
 public:
  struct Entry {
    double time;
    std::uint64_t key;
  };

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return size_; }

  [[gnu::always_inline]] void push(double time, std::uint64_t key) {
    // Most pushes have the time of the push before and a key after that bucket's last.
    if (last_ != kNone && last_bits_ == bits(time)) {
      Bucket& b = buckets_[last_];
      if (key >= b.keys.back()) {
        b.keys.push_back(key);
        ++size_;
        return;
      }
    }
    push_anywhere(time, key);
  }

  // The least entry, taken out; the queue must not be empty.
  Entry take() {
    const Entry least = top();
    pop();
    return least;
  }

  // The least entry; the queue must not be empty.
  Entry top() const {
    const Bucket& b = buckets_[heap_.front().bucket];
    return {b.time, b.keys[b.head]};
  }

  // The k-th entry after the least (0: the least itself) if it has the least's time (the
  // entries about to come out, for prefetching what they will touch).
  bool peek(std::size_t k, std::uint64_t& key) const {
    if (heap_.empty()) return false;
    const Bucket& b = buckets_[heap_.front().bucket];
    if (b.head + k >= b.keys.size()) return false;
    key = b.keys[b.head + k];
    return true;
  }

  void pop() {
    const std::uint32_t i = heap_.front().bucket;
    Bucket& b = buckets_[i];
    --size_;
    if (++b.head < b.keys.size()) return;
    forget(b.time);
    b.keys.clear();
    b.head = 0;
    free_.push_back(i);
    pop_heap();
    if (!heap_.empty()) sort_front();
  }

 private:
  void push_anywhere(double time, std::uint64_t key) {
    const std::uint32_t i = bucket_for(time);
    Bucket& b = buckets_[i];
    if (b.keys.empty() || key >= b.keys.back()) {
      b.keys.push_back(key);
    } else if (i != heap_.front().bucket) {
      b.keys.push_back(key);
      b.sorted = false;
    } else {  // the bucket being taken out: its place among the keys not taken yet
      const auto at = std::upper_bound(b.keys.begin() + static_cast<long>(b.head), b.keys.end(), key);
      b.keys.insert(at, key);
    }
    ++size_;
  }

  struct Bucket {
    double time = 0;
    std::vector<std::uint64_t> keys;  // from `head` on: the keys not taken out yet
    std::size_t head = 0;
    bool sorted = true;  // the keys are in order (always, for the bucket at the front)
  };

  void sort_front() {
    Bucket& b = buckets_[heap_.front().bucket];
    if (b.sorted) return;
    std::sort(b.keys.begin() + static_cast<long>(b.head), b.keys.end());
    b.sorted = true;
  }
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // The time's bits; 0 and -0 compare equal, so they share a bucket.
  static std::uint64_t bits(double time) { return time == 0 ? 0 : std::bit_cast<std::uint64_t>(time); }

  std::uint32_t bucket_for(double time) {
    const std::uint64_t t = bits(time);
    if (last_ != kNone && last_bits_ == t) return last_;
    std::uint32_t i = find(t);
    if (i == kNone) i = open_bucket(time, t);
    last_ = i;
    last_bits_ = t;
    return i;
  }

  std::uint32_t open_bucket(double time, std::uint64_t t) {
    std::uint32_t i;
    if (free_.empty()) {
      i = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    } else {
      i = free_.back();
      free_.pop_back();
    }
    buckets_[i].time = time;
    buckets_[i].sorted = true;
    insert(t, i);
    push_heap({time, i});
    return i;
  }

  // ---- the heap of buckets, by time ----
  // Four children a node, each entry with its bucket's time beside it: a pop compares
  // times without reading the buckets (at thousands of distinct times, a tree's ranks
  // each at its own, most of a pop was fetching them). Times in the heap are all
  // different (one bucket a time), so the order taken out does not depend on its shape.
  struct HeapEntry {
    double time;
    std::uint32_t bucket;
  };
  static constexpr std::size_t kArity = 4;
  void push_heap(HeapEntry e) {
    std::size_t at = heap_.size();
    heap_.push_back(e);
    while (at > 0) {
      const std::size_t up = (at - 1) / kArity;
      if (!(e.time < heap_[up].time)) break;
      heap_[at] = heap_[up];
      at = up;
    }
    heap_[at] = e;
  }
  void pop_heap() {
    const HeapEntry last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return;
    std::size_t at = 0;
    for (;;) {
      const std::size_t first = kArity * at + 1;
      if (first >= n) break;
      std::size_t least = first;
      const std::size_t end = std::min(first + kArity, n);
      for (std::size_t c = first + 1; c < end; ++c)
        if (heap_[c].time < heap_[least].time) least = c;
      if (!(heap_[least].time < last.time)) break;
      heap_[at] = heap_[least];
      at = least;
    }
    heap_[at] = last;
  }

  // ---- time -> bucket: open addressing, linear probing, deletion by backward shift ----
  struct Slot {
    std::uint64_t bits;
    std::uint32_t bucket = kNone;  // kNone: empty
  };
  std::size_t home(std::uint64_t t) const {
    t *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(t >> 32 ^ t) & (slots_.size() - 1);
  }
  std::uint32_t find(std::uint64_t t) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(t);; i = (i + 1) & mask) {
      if (slots_[i].bucket == kNone) return kNone;
      if (slots_[i].bits == t) return slots_[i].bucket;
    }
  }
  void insert(std::uint64_t t, std::uint32_t bucket) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(t);
    while (slots_[i].bucket != kNone) i = (i + 1) & mask;
    slots_[i] = {t, bucket};
    ++used_;
  }
  void forget(double time) {
    const std::uint64_t t = bits(time);
    if (last_bits_ == t) last_ = kNone;
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(t);
    while (slots_[i].bits != t || slots_[i].bucket == kNone) i = (i + 1) & mask;
    i = close_hole(slots_, i, [this](const Slot& s) { return home(s.bits); },
                   [](const Slot& s) { return s.bucket != kNone; });
    slots_[i].bucket = kNone;
    --used_;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    used_ = 0;
    for (const Slot& s : old)
      if (s.bucket != kNone) insert(s.bits, s.bucket);
  }

  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;  // buckets not in use
  std::vector<HeapEntry> heap_;      // buckets in use, least time first
  std::vector<Slot> slots_ = std::vector<Slot>(16);
  std::size_t used_ = 0;
  std::size_t size_ = 0;
  std::uint32_t last_ = kNone;  // the bucket of the last push's time
  std::uint64_t last_bits_ = 0;
};

}  // namespace collscope::detail
