#include <array>
#include <new>
#include <vector>

#include "collscope/generator.hpp"

namespace collscope::detail {
namespace {

constexpr std::size_t kClassBytes = 64;    // size classes of 64 bytes
constexpr std::size_t kClasses = 64;       // up to 4 KiB; larger frames use new/delete
constexpr std::size_t kKeepPerClass = 32;  // free frames kept per class

struct FreeLists {
  std::array<std::vector<void*>, kClasses> free;
  ~FreeLists() {
    for (auto& list : free)
      for (void* p : list) ::operator delete(p);
  }
};

FreeLists& lists() {
  thread_local FreeLists l;
  return l;
}

std::size_t size_class(std::size_t bytes) { return (bytes + kClassBytes - 1) / kClassBytes; }

}  // namespace

void* allocate_frame(std::size_t bytes) {
  const std::size_t c = size_class(bytes);
  if (c >= kClasses) return ::operator new(bytes);
  std::vector<void*>& list = lists().free[c];
  if (list.empty()) return ::operator new(c * kClassBytes);
  void* p = list.back();
  list.pop_back();
  return p;
}

void free_frame(void* frame, std::size_t bytes) noexcept {
  const std::size_t c = size_class(bytes);
  if (c >= kClasses) return ::operator delete(frame);
  std::vector<void*>& list = lists().free[c];
  if (list.size() >= kKeepPerClass) return ::operator delete(frame);
  try {
    list.push_back(frame);
  } catch (...) {
    ::operator delete(frame);
  }
}

}  // namespace collscope::detail
