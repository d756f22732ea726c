#include "channel_table.hpp"

namespace collscope::detail {

std::size_t ChannelTable::home(const ChannelKey& k) const {
  std::uint64_t h = static_cast<std::uint32_t>(k.src);
  h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(k.dst);
  h = h * 0x9E3779B97F4A7C15ull ^ k.seq;
  h = h * 0x9E3779B97F4A7C15ull ^ k.tag;
  h *= 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(h ^ (h >> 32)) & (slots_.size() - 1);
}

std::size_t ChannelTable::find_or_add(const ChannelKey& k) {
  if (2 * (used_ + 1) > slots_.size()) grow();  // load factor at most 1/2
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(k);
  while (slots_[i].used && !(slots_[i].key == k)) i = (i + 1) & mask;
  if (!slots_[i].used) {
    slots_[i] = Slot{};
    slots_[i].key = k;
    slots_[i].used = true;
    ++used_;
  }
  return i;
}

// Linear probing's deletion without tombstones: the entries after the hole that would
// no longer be found from their home slot move back into it.
void ChannelTable::erase_at(std::size_t i) {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
    const std::size_t h = home(slots_[j].key);
    const bool reachable = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (reachable) continue;  // its probe from h does not pass the hole
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i].used = false;
  --used_;
}

void ChannelTable::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  used_ = 0;
  for (const Slot& s : old) {
    if (!s.used) continue;
    const std::size_t i = find_or_add(s.key);
    slots_[i] = s;
  }
}

void ChannelTable::push(Slot& s, const PendingRecv& item) {
  int n = free_;
  if (n >= 0) {
    free_ = nodes_[static_cast<std::size_t>(n)].next;
  } else {
    n = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[static_cast<std::size_t>(n)] = Node{item, -1};
  if (s.tail >= 0) nodes_[static_cast<std::size_t>(s.tail)].next = n;
  else s.head = n;
  s.tail = n;
}

PendingRecv ChannelTable::pop(Slot& s) {
  const int n = s.head;
  Node& node = nodes_[static_cast<std::size_t>(n)];
  s.head = node.next;
  if (s.head < 0) s.tail = -1;
  node.next = free_;
  free_ = n;
  return node.recv;
}

std::optional<PendingRecv> ChannelTable::send(const ChannelKey& k, int transfer) {
  const std::size_t i = find_or_add(k);
  Slot& s = slots_[i];
  if (s.head >= 0 && !s.sends) {  // the oldest unmatched receive takes it
    const PendingRecv r = pop(s);
    if (s.head < 0) erase_at(i);
    return r;
  }
  s.sends = true;
  push(s, PendingRecv{transfer, 0, 0});
  return std::nullopt;
}

std::optional<int> ChannelTable::recv(const ChannelKey& k, int rank, std::uint32_t event) {
  const std::size_t i = find_or_add(k);
  Slot& s = slots_[i];
  const std::uint32_t number = s.recvs_posted++;
  if (s.head >= 0 && s.sends) {  // the oldest unmatched send is its message
    const int transfer = pop(s).rank;
    if (s.head < 0) erase_at(i);
    return transfer;
  }
  s.sends = false;
  push(s, PendingRecv{rank, event, number});
  return std::nullopt;
}

}  // namespace collscope::detail
