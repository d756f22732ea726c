#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>

#include "collscope/schedule.hpp"

namespace collscope {

Plan::Plan(int rank, int nranks, const CollArgs& args, Aliasing aliasing)
    : rank_(rank), nranks_(nranks), args_(args), elem_(args.elem_size()), aliasing_(aliasing) {}

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

// ---- StepBuilder -----------------------------------------------------------------------

std::vector<std::unique_ptr<StepBuilder::Storage>>& StepBuilder::pool() {
  thread_local std::vector<std::unique_ptr<Storage>> free;
  return free;
}

StepBuilder::Storage* StepBuilder::borrow() {
  auto& free = pool();
  if (free.empty()) return new Storage;
  Storage* s = free.back().release();
  free.pop_back();
  s->comm.clear();
  s->local.clear();
  return s;
}

StepBuilder::StepBuilder(const Plan& plan)
    : plan_(plan), storage_(borrow()), comm_(storage_->comm), local_(storage_->local) {}

namespace {

// Op lists that grew past this are freed rather than kept for the next step or call: a
// call of thousands of ranks (the time model) holds a builder per rank, and one large
// step each (a direct all-reduce's 3 N operations) must not stay with every one of them.
constexpr std::size_t kKeepBytes = std::size_t{16} << 10;

template <class T>
void clear_or_free(std::vector<T>& v) {
  if (v.capacity() * sizeof(T) > kKeepBytes) std::vector<T>().swap(v);
  else v.clear();
}

}  // namespace

StepBuilder::~StepBuilder() {
  if (plan_.last_builder_ == this) plan_.last_builder_ = nullptr;
  clear_or_free(comm_);
  clear_or_free(local_);
  std::unique_ptr<Storage> mine(storage_);
  try {
    pool().push_back(std::move(mine));
  } catch (...) {  // out of memory: just free it
  }
}

void StepBuilder::start_if_done() {
  if (!done_) return;
  clear_or_free(comm_);
  clear_or_free(local_);
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
  plan_.last_builder_ = this;
  return step_;
}

void StepBuilder::drop_lists() {
  clear_or_free(comm_);
  clear_or_free(local_);
  step_ = Step{};
}

void Plan::drop_built_step() const {
  if (last_builder_ != nullptr) last_builder_->drop_lists();
}

}  // namespace collscope
