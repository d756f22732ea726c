// Deletion from an open-addressing table with linear probing (the simulator's channel
// table and event queue), without tombstones.
#pragma once

#include <cstddef>
#include <vector>

namespace collscope::detail {

// Empties slot i: the entries after the hole that would no longer be found from their
// home slot move back into it. `home(slot)` is an entry's home index, `occupied(slot)`
// whether a slot holds one; the size is a power of two. Returns the slot left empty, for
// the caller to mark so.
template <class Slot, class Home, class Occupied>
std::size_t close_hole(std::vector<Slot>& slots, std::size_t i, Home home, Occupied occupied) {
  const std::size_t mask = slots.size() - 1;
  for (std::size_t j = (i + 1) & mask; occupied(slots[j]); j = (j + 1) & mask) {
    const std::size_t h = home(slots[j]);
    const bool reachable = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (reachable) continue;  // its probe from h does not pass the hole
    slots[i] = slots[j];
    i = j;
  }
  return i;
}

}  // namespace collscope::detail
