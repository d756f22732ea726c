#include "collscope/layers/compute/engine.hpp"

#include "collscope/layers/compute/array.hpp"

namespace collscope::layers {

Engine::Engine(std::unique_ptr<Gemm> gemm, std::unique_ptr<Kernels> kernels)
    : gemm_(std::move(gemm)), kernels_(std::move(kernels)) {}

// The events are the derived engine's: it destroys them (release_events) in its own
// destructor, where its runtime is still there.
Engine::~Engine() = default;

Engine::Event Engine::pooled_event(std::size_t i) {
  while (profile_events_.size() <= i) profile_events_.push_back(create_event());
  return profile_events_[i];
}

void Engine::run_gemm(const GemmCall& g) {
  if (!profiling_) {
    gemm_->run(g, stream());
    return;
  }
  const std::size_t i = 2 * profile_.calls;
  record(pooled_event(i), stream());
  gemm_->run(g, stream());
  record(pooled_event(i + 1), stream());
  profile_.flop += g.flop();
  ++profile_.calls;
}

void Engine::start_gemm_profile() {
  profiling_ = true;
  profile_ = {};
}

GemmProfile Engine::finish_gemm_profile() {
  profiling_ = false;
  for (std::size_t i = 0; i < profile_.calls; ++i)
    profile_.ms += elapsed_ms(profile_events_[2 * i], profile_events_[2 * i + 1]);
  return profile_;
}

void Engine::release_profile_events() {
  for (Event e : profile_events_) destroy_event(e);
  profile_events_.clear();
}

// ---- Array --------------------------------------------------------------------------------

Array::Array(Engine& engine, std::size_t rows, std::size_t cols, DataType dtype)
    : engine_(&engine), rows_(rows), cols_(cols), dtype_(dtype) {
  if (bytes() > 0) data_ = engine.allocate(bytes());
}

void Array::reset() {
  if (engine_ && data_) engine_->release(data_, bytes());
  engine_ = nullptr;
  data_ = nullptr;
  rows_ = cols_ = 0;
}

}  // namespace collscope::layers
