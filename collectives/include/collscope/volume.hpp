// Bytes and messages one rank sends and receives in one collective call.
#pragma once

#include <cstdint>

namespace collscope {

struct RankVolume {
  std::uint64_t sent_bytes = 0;
  std::uint64_t sent_msgs = 0;
  std::uint64_t recv_bytes = 0;
  std::uint64_t recv_msgs = 0;

  void send(std::uint64_t bytes) { sent_bytes += bytes; sent_msgs += bytes > 0; }
  void recv(std::uint64_t bytes) { recv_bytes += bytes; recv_msgs += bytes > 0; }
  // A zero-byte notification (Comm::signal / expect_signal): a message, no bytes.
  void signal_sent() { ++sent_msgs; }
  void signal_received() { ++recv_msgs; }
  RankVolume& operator+=(const RankVolume& o) {
    sent_bytes += o.sent_bytes; sent_msgs += o.sent_msgs;
    recv_bytes += o.recv_bytes; recv_msgs += o.recv_msgs;
    return *this;
  }
  bool operator==(const RankVolume&) const = default;
};

}  // namespace collscope
