#include "collscope/counting_transport.hpp"

namespace collscope {

CountingTransport::CountingTransport(Transport& inner)
    : inner_(inner), per_peer_(static_cast<std::size_t>(inner.size())) {}

Request CountingTransport::isend(int peer, const void* buf, std::size_t bytes,
                                 MemoryKind mem, Tag tag) {
  Request r = inner_.isend(peer, buf, bytes, mem, tag);
  RankVolume& v = per_peer_[static_cast<std::size_t>(peer)];
  v.sent_bytes += bytes;
  ++v.sent_msgs;  // a message is a message, even an empty one
  return r;
}

Request CountingTransport::irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem,
                                 Tag tag) {
  Request r = inner_.irecv(peer, buf, bytes, mem, tag);
  RankVolume& v = per_peer_[static_cast<std::size_t>(peer)];
  v.recv_bytes += bytes;
  ++v.recv_msgs;
  return r;
}

void CountingTransport::reset() {
  for (RankVolume& v : per_peer_) v = {};
}

RankVolume CountingTransport::total() const {
  RankVolume t;
  for (const RankVolume& v : per_peer_) t += v;
  return t;
}

}  // namespace collscope
