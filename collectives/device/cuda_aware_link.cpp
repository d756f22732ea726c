// The cuda_aware path: device pointers straight to a CUDA-aware MPI or UCX. The library
// reads and writes device memory outside the stream's order, so before a message is
// posted the stream is drained: a send then reads finished data, and a receive never
// lands under a kernel still reading its bytes.
#include "links.hpp"

namespace collscope::device {
namespace {

class CudaAwareLink final : public Link {
 public:
  CudaAwareLink(LinkContext ctx, std::unique_ptr<Transport> transport)
      : ctx_(ctx), transport_(std::move(transport)) {}

  int post_recv(const CommOp& op, std::byte* at, Tag tag, bool) override {
    drain();
    return post({transport_->irecv(op.peer, at, at ? op.bytes : 0, MemoryKind::device, tag), op.peer, true});
  }
  int post_send(const CommOp& op, const std::byte* at, Tag tag) override {
    drain();
    return post({transport_->isend(op.peer, at, at ? op.bytes : 0, MemoryKind::device, tag), op.peer, false});
  }
  void wait(int h) override {
    wait_request(*transport_, requests_[h].request, requests_[h].peer, requests_[h].recv);
    requests_.give(h);
  }
  void end_call() override { transport_->quiesce(); }

 private:
  void drain() {
    if (!ctx_.stream_busy) return;
    ctx_.rt.synchronize(ctx_.stream);
    ctx_.stream_busy = false;
  }
  struct Posted {
    Request request;
    int peer = -1;
    bool recv = false;
  };
  int post(Posted p) {
    const int h = requests_.take();
    requests_[h] = p;
    return h;
  }

  LinkContext ctx_;
  std::unique_ptr<Transport> transport_;
  Slots<Posted> requests_;
};

}  // namespace

std::unique_ptr<Link> make_cuda_aware_link(LinkContext ctx, std::unique_ptr<Transport> transport) {
  return std::make_unique<CudaAwareLink>(ctx, std::move(transport));
}

}  // namespace collscope::device
