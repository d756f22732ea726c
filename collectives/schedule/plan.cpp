#include <numeric>
#include <stdexcept>
#include <string>

#include "collscope/schedule.hpp"

namespace collscope {

Plan::Plan(int rank, int nranks, const CollArgs& args, Aliasing aliasing)
    : rank_(rank), nranks_(nranks), args_(args), aliasing_(aliasing) {}

BufRef Plan::scratch(std::size_t bytes) {
  if (frozen_) throw std::logic_error("a schedule declared scratch after its first step");
  if (num_scratch_ == kMaxScratch)
    throw std::logic_error("a schedule declared more than " + std::to_string(kMaxScratch) +
                           " scratch buffers");
  scratch_[num_scratch_] = bytes;
  return {Region::scratch, static_cast<std::uint16_t>(num_scratch_++), 0};
}

std::uint32_t Plan::tag() {
  if (frozen_) throw std::logic_error("a schedule declared a tag after its first step");
  if (tags_ == kMaxTags) throw std::logic_error("a schedule declared too many tags");
  return ++tags_;
}

std::size_t Plan::scratch_total() const {
  return std::accumulate(scratch_.begin(), scratch_.begin() + static_cast<long>(num_scratch_),
                         std::size_t{0});
}

Range Plan::locate(BufRef ref, std::size_t bytes) const {
  constexpr int kRecvSpace = 0, kSendSpace = 1, kFirstScratchSpace = 2;
  Range r{kRecvSpace, ref.offset, ref.offset + bytes};
  switch (ref.region) {
    case Region::recv:
      if (aliasing_.kind == Aliasing::recv_inside_send) {  // recv lies in the send space
        r.space = kSendSpace;
        r.begin += aliasing_.offset;
        r.end += aliasing_.offset;
      }
      return r;
    case Region::send:
      switch (aliasing_.kind) {
        case Aliasing::none:
        case Aliasing::recv_inside_send: r.space = kSendSpace; return r;
        case Aliasing::same: return r;
        case Aliasing::send_inside_recv:
          r.begin += aliasing_.offset;
          r.end += aliasing_.offset;
          return r;
      }
      return r;
    case Region::scratch: r.space = kFirstScratchSpace + ref.slot; return r;
  }
  return r;
}

// ---- StepBuilder -----------------------------------------------------------------------

void StepBuilder::start_if_done() {
  if (!done_) return;
  comm_.clear();
  local_.clear();
  done_ = false;
}

StepBuilder& StepBuilder::comm(CommKind kind, int peer, BufRef buf, std::size_t bytes,
                               std::uint32_t tag) {
  start_if_done();
  comm_.push_back({kind, peer, buf, bytes, tag});
  return *this;
}

StepBuilder& StepBuilder::send(int peer, BufRef from, std::size_t bytes, std::uint32_t tag) {
  if (bytes == 0) return *this;
  return comm(CommKind::send, peer, from, bytes, tag);
}

StepBuilder& StepBuilder::recv(int peer, BufRef into, std::size_t bytes, std::uint32_t tag) {
  if (bytes == 0) return *this;
  if (into.region == Region::send) throw std::logic_error("a schedule receives into the send buffer");
  return comm(CommKind::recv, peer, into, bytes, tag);
}

StepBuilder& StepBuilder::signal(int peer, std::uint32_t tag) {
  return comm(CommKind::signal, peer, {}, 0, tag);
}

StepBuilder& StepBuilder::wait_signal(int peer, std::uint32_t tag) {
  return comm(CommKind::wait_signal, peer, {}, 0, tag);
}

StepBuilder& StepBuilder::local(LocalOp op) {
  if (op.bytes == 0) return *this;
  if (op.out.region == Region::send) throw std::logic_error("a schedule writes the send buffer");
  start_if_done();
  local_.push_back(op);
  return *this;
}

StepBuilder& StepBuilder::reduce(BufRef out, BufRef a, BufRef b, std::size_t bytes) {
  return local({LocalKind::reduce, out, a, b, bytes});
}

StepBuilder& StepBuilder::copy(BufRef out, BufRef from, std::size_t bytes) {
  if (plan_.locate(out, bytes) == plan_.locate(from, bytes)) return *this;  // in place
  return local({LocalKind::copy, out, from, {}, bytes});
}

StepBuilder& StepBuilder::divide(BufRef buf, std::size_t bytes) {
  return local({LocalKind::divide, buf, buf, {}, bytes});
}

const Step& StepBuilder::step(const char* phase, int index, bool overlap_next) {
  start_if_done();
  step_ = Step{phase, index, comm_, local_, overlap_next};
  done_ = true;
  return step_;
}

}  // namespace collscope
