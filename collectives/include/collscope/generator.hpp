// Generator<T>: a lazily produced sequence, written as a C++20 coroutine. The body runs
// only as far as the consumer asks: each next() resumes it up to its next co_yield.
// Schedules are generators of steps, so a schedule of a million segments never exists
// in memory at once.
//
//   Generator<int> count_to(int n) { for (int i = 0; i < n; ++i) co_yield i; }
//   for (auto g = count_to(3); g.next();) use(g.value());
//
// A yielded value lives in the coroutine's frame and is valid until the next next().
// An exception thrown by the body comes out of next().
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <utility>

namespace collscope {

namespace detail {
// Coroutine frames come from per-thread free lists by size class, so a schedule made
// for every call of a benchmark allocates nothing once warm (frames of the same
// coroutine are always the same size).
void* allocate_frame(std::size_t bytes);
void free_frame(void* frame, std::size_t bytes) noexcept;
}  // namespace detail

template <class T>
class Generator {
 public:
  struct promise_type {
    const T* current = nullptr;
    std::exception_ptr error;

    static void* operator new(std::size_t bytes) { return detail::allocate_frame(bytes); }
    static void operator delete(void* frame, std::size_t bytes) noexcept {
      detail::free_frame(frame, bytes);
    }
    Generator get_return_object() { return Generator(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(const T& value) noexcept {
      current = std::addressof(value);
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() { error = std::current_exception(); }
  };
  using Handle = std::coroutine_handle<promise_type>;

  Generator() = default;
  Generator(Generator&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Generator& operator=(Generator&& other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  ~Generator() { destroy(); }

  // Advances to the next value; false once the body has finished.
  bool next() {
    if (!handle_ || handle_.done()) return false;
    handle_.resume();
    if (handle_.promise().error) std::rethrow_exception(std::exchange(handle_.promise().error, {}));
    return !handle_.done();
  }
  // The value the last successful next() produced.
  const T& value() const { return *handle_.promise().current; }

 private:
  explicit Generator(Handle h) : handle_(h) {}
  void destroy() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  Handle handle_;
};

}  // namespace collscope
