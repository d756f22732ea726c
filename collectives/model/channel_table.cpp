#include "channel_table.hpp"

#include "linear_probing.hpp"

namespace collscope::detail {

std::size_t UnmatchedSends::home(const ChannelKey& k) const {
  std::uint64_t h = static_cast<std::uint32_t>(k.src);
  h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(k.dst);
  h = h * 0x9E3779B97F4A7C15ull ^ k.seq;
  h = h * 0x9E3779B97F4A7C15ull ^ k.tag;
  h *= 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(h ^ (h >> 32)) & (slots_.size() - 1);
}

std::size_t UnmatchedSends::find(const ChannelKey& k) const {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(k);
  while (slots_[i].used && !(slots_[i].key == k)) i = (i + 1) & mask;
  return i;
}

void UnmatchedSends::erase_at(std::size_t i) {
  i = close_hole(slots_, i, [this](const Slot& s) { return home(s.key); },
                 [](const Slot& s) { return s.used; });
  slots_[i].used = false;
  --used_;
}

void UnmatchedSends::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  for (const Slot& s : old)
    if (s.used) slots_[find(s.key)] = s;
}

void UnmatchedSends::push(const ChannelKey& k, std::uint32_t id) {
  if (2 * (used_ + 1) > slots_.size()) grow();  // load factor at most 1/2
  Slot& s = slots_[find(k)];
  if (!s.used) {
    s = Slot{k, -1, -1, true};
    ++used_;
  }
  int n = free_;
  if (n >= 0) {
    free_ = nodes_[static_cast<std::size_t>(n)].next;
  } else {
    n = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[static_cast<std::size_t>(n)] = Node{id, -1};
  if (s.tail >= 0) nodes_[static_cast<std::size_t>(s.tail)].next = n;
  else s.head = n;
  s.tail = n;
}

std::optional<std::uint32_t> UnmatchedSends::take(const ChannelKey& k) {
  if (used_ == 0) return std::nullopt;
  const std::size_t i = find(k);
  Slot& s = slots_[i];
  if (!s.used) return std::nullopt;
  const int n = s.head;
  Node& node = nodes_[static_cast<std::size_t>(n)];
  s.head = node.next;
  node.next = free_;
  free_ = n;
  const std::uint32_t id = node.id;
  if (s.head < 0) erase_at(i);
  return id;
}

}  // namespace collscope::detail
