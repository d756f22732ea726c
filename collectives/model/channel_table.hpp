// The simulator's sends that no receive has taken yet, per channel (source, destination,
// seq, tag), oldest first: a receive takes the oldest send of its channel, as MPI matches
// them. A channel is dropped once it holds none, so only what is in flight is kept.
// (Receives posted before their send wait with their rank, simulator.cpp: a direct
// all-reduce at N = 4096 posts 16.7 million of them at once, and a table keyed by channel
// would hold a slot for each.)
//
// An open-addressing table (linear probing, deletion by backward shift) over a pool of
// list nodes: no allocation per message.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace collscope::detail {

struct ChannelKey {
  int src = 0, dst = 0;
  std::uint32_t seq = 0, tag = 0;
  bool operator==(const ChannelKey&) const = default;
};

class UnmatchedSends {
 public:
  // A send of transfer `id` on `k` that no receive has taken.
  void push(const ChannelKey& k, std::uint32_t id);
  // The oldest send on `k`, taken; or none.
  std::optional<std::uint32_t> take(const ChannelKey& k);
  bool empty() const { return used_ == 0; }

 private:
  struct Node {
    std::uint32_t id = 0;
    int next = -1;
  };
  struct Slot {
    ChannelKey key;
    int head = -1, tail = -1;  // its queue in nodes_
    bool used = false;
  };

  std::size_t find(const ChannelKey& k) const;  // its slot, or the empty slot it would take
  void erase_at(std::size_t i);
  void grow();
  std::size_t home(const ChannelKey& k) const;

  std::vector<Slot> slots_ = std::vector<Slot>(64);  // a power of two
  std::size_t used_ = 0;
  std::vector<Node> nodes_;
  int free_ = -1;  // free list of nodes_
};

}  // namespace collscope::detail
