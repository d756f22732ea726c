// A first-in first-out queue in one vector: the front leaves by moving an index, and the
// space before it is reclaimed now and then (amortised O(1)), so a window that slides by
// one element per step costs no shifting. Used for the host executor's in-flight sends
// (sequencer.hpp) and the simulator's per-rank queues, which run for millions of steps at
// scale; std::deque costs two dependent loads per access and a separate allocation.
#pragma once

#include <cstddef>
#include <vector>

namespace collscope {

template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_.back(); }
  T& operator[](std::size_t i) { return items_[head_ + i]; }
  T* begin() { return items_.data() + head_; }
  T* end() { return items_.data() + items_.size(); }
  void push_back(const T& v) { items_.push_back(v); }
  void pop_front() {
    if (++head_ == items_.size()) {
      clear();
    } else if (head_ >= 32 && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<long>(head_));
      head_ = 0;
    }
  }
  // Removes element i (0: the front); O(size) unless i is 0.
  void erase(std::size_t i) {
    if (i == 0) pop_front();
    else items_.erase(items_.begin() + static_cast<long>(head_ + i));
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace collscope
