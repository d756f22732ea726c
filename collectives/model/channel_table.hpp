// The simulator's unmatched messages: sends no receive has taken yet and receives no
// send has come for yet, matched in posting order per (source, destination, seq, tag),
// as MPI matches them. A channel (one such key) holds sends or receives, never both,
// and is dropped once it holds neither, so only what is in flight is kept.
//
// An open-addressing table (linear probing, deletion by backward shift) over a pool of
// list nodes: no allocation per message, about 50 bytes per pending message. It
// matters at scale: a direct all-reduce at N = 4096 posts 16.7 million receives before
// its sends arrive, which a node-based hash map of vectors held in 9 GiB.
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

// A pending receive: its rank, its event's index in the rank's trace, and its position
// among the receives of its channel (for error messages).
struct PendingRecv {
  int rank = 0;
  std::uint32_t event = 0;
  std::uint32_t number = 0;
};

class ChannelTable {
 public:
  // A send of `transfer` on `k`: the oldest unmatched receive, taken; or none, and the
  // send waits in the channel.
  std::optional<PendingRecv> send(const ChannelKey& k, int transfer);
  // A receive on `k` by `rank` at trace event `event`: the oldest unmatched send's
  // transfer, taken; or none, and the receive waits in the channel.
  std::optional<int> recv(const ChannelKey& k, int rank, std::uint32_t event);
  // Calls f(key, pending) for every unmatched receive.
  template <class F>
  void for_each_recv(F f) const {
    for (const Slot& s : slots_)
      if (s.used && !s.sends)
        for (int n = s.head; n >= 0; n = nodes_[static_cast<std::size_t>(n)].next)
          f(s.key, nodes_[static_cast<std::size_t>(n)].recv);
  }

 private:
  struct Node {
    PendingRecv recv;  // a receive; a send keeps its transfer id in recv.rank
    int next = -1;
  };
  struct Slot {
    ChannelKey key;
    int head = -1, tail = -1;       // its queue in nodes_ (-1: empty)
    std::uint32_t recvs_posted = 0;
    bool sends = false;             // the queue holds sends (else receives)
    bool used = false;
  };

  std::size_t find_or_add(const ChannelKey& k);
  void erase_at(std::size_t i);
  void grow();
  std::size_t home(const ChannelKey& k) const;
  void push(Slot& s, const PendingRecv& item);
  PendingRecv pop(Slot& s);

  std::vector<Slot> slots_ = std::vector<Slot>(64);  // a power of two
  std::size_t used_ = 0;
  std::vector<Node> nodes_;
  int free_ = -1;  // free list of nodes_
};

}  // namespace collscope::detail
