// A decorator that counts, per peer, the bytes and messages passing through any
// transport: the *measured* volume. Reset it before a call, read it after.
#pragma once

#include <vector>

#include "collscope/transport.hpp"
#include "collscope/volume.hpp"

namespace collscope {

class CountingTransport final : public Transport {
 public:
  explicit CountingTransport(Transport& inner);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  Request isend(int peer, const void* buf, std::size_t bytes, MemoryKind mem,
                Tag tag) override;
  Request irecv(int peer, void* buf, std::size_t bytes, MemoryKind mem, Tag tag) override;
  void wait(Request& req) override { inner_.wait(req); }
  void wait_all(std::span<Request> reqs) override { inner_.wait_all(reqs); }
  void quiesce() override { inner_.quiesce(); }

  void reset();
  // Row p: what this rank sent to and received from peer p.
  const std::vector<RankVolume>& per_peer() const { return per_peer_; }
  RankVolume total() const;

 private:
  Transport& inner_;
  std::vector<RankVolume> per_peer_;
};

}  // namespace collscope
