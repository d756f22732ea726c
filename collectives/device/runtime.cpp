#include "collscope/device/runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "collscope/build_config.hpp"
#include "collscope/errors.hpp"
#include "runtimes.hpp"
#include "slowdown.hpp"

namespace collscope::device {

void* Runtime::alloc(std::size_t bytes) {
  void* p = do_alloc(bytes == 0 ? 1 : bytes);  // a zero-byte call still has an address
  std::lock_guard lock(mutex_);
  allocations_.push_back({{p, bytes, next_id_++}, 0, false});
  return p;
}

void Runtime::free(void* p) {
  if (!p) return;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(allocations_.begin(), allocations_.end(),
                           [p](const Registered& r) { return r.allocation.base == p; });
    if (it != allocations_.end()) {
      if (it->holds > 0) {
        it->retired = true;  // freed when the last hold goes
        return;
      }
      allocations_.erase(it);
    }
  }
  do_free(p);
}

std::vector<Runtime::Registered>::iterator Runtime::find_id(std::uint64_t id) {
  return std::find_if(allocations_.begin(), allocations_.end(),
                      [id](const Registered& r) { return r.allocation.id == id; });
}

void Runtime::hold(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = find_id(id);
  if (it == allocations_.end()) throw RuntimeError("device: hold of an unknown allocation");
  ++it->holds;
}

void Runtime::unhold(std::uint64_t id) {
  void* base = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = find_id(id);
    if (it == allocations_.end() || it->holds == 0) return;
    if (--it->holds > 0 || !it->retired) return;
    base = it->allocation.base;
    allocations_.erase(it);
  }
  do_free(base);
}

bool Runtime::retired(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  for (const Registered& r : allocations_)
    if (r.allocation.id == id) return r.retired;
  return false;
}

Allocation Runtime::allocation_of(const void* p, std::size_t bytes) const {
  const auto* at = static_cast<const std::byte*>(p);
  std::lock_guard lock(mutex_);
  for (const Registered& r : allocations_) {
    const Allocation& a = r.allocation;
    const auto* base = static_cast<const std::byte*>(a.base);
    if (!r.retired && at >= base && at + bytes <= base + std::max<std::size_t>(a.bytes, 1)) return a;
  }
  throw RuntimeError("device: " + std::to_string(bytes) +
                     " B at an address no collscope allocation holds (IPC exports only those)");
}

bool Runtime::owns(const void* p) const {
  const auto* at = static_cast<const std::byte*>(p);
  std::lock_guard lock(mutex_);
  for (const Registered& r : allocations_) {
    const auto* base = static_cast<const std::byte*>(r.allocation.base);
    if (!r.retired && at >= base && at < base + std::max<std::size_t>(r.allocation.bytes, 1)) return true;
  }
  return false;
}

namespace {

bool emulation_asked() {
  const char* v = std::getenv("COLLSCOPE_DEVICE_EMULATION");
  return v && std::string_view(v) == "1";
}

struct Selected {
  std::unique_ptr<Runtime> runtime;
  std::string reason;  // why there is none
};

Selected select_runtime() {
  if (std::string bad = slowdown_problem(); !bad.empty()) return {nullptr, bad};  // a test hook
  if (emulation_asked()) return {make_emulated_runtime(), ""};
#if COLLSCOPE_HAVE_CUDA
  std::string why;
  auto rt = make_cuda_runtime(why);
  if (rt) return {std::move(rt), ""};
  return {nullptr, why};
#else
  return {nullptr, "this build has no CUDA (rebuild where the CUDA toolkit is installed)"};
#endif
}

Selected& selected() {
  static Selected s = select_runtime();
  return s;
}

}  // namespace

std::string unavailable_reason() { return selected().runtime ? "" : selected().reason; }

Runtime& runtime() {
  Selected& s = selected();
  if (!s.runtime) throw UsageError("device memory is unavailable: " + s.reason);
  return *s.runtime;
}

}  // namespace collscope::device
