// A pass's timeline, from events on the streams: the compute stream's busy stretches and
// each collective call's span on its group's stream, read once the pass is done.
//
//   compute   the compute stream from the pass's start to its end, less the gaps between
//             a pause and the next resume: CollectiveCalls pauses it where it issues a
//             collective (on the host and the emulated device the call runs right
//             there) and where the stream waits for one (a join)
//   comm      each call, from its start on its group's stream (after the compute it
//             depends on) to its end
//   exposed   the part of a call's span that no compute stretch covers: what the pass
//             waits for. hidden = comm - exposed: what ran beside compute (--overlap)
//
// On a GPU the events are CUDA events on the streams; on the host (and the emulated
// device, whose work runs when enqueued) an event is the clock at its recording.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "collscope/layers/compute/engine.hpp"

namespace collscope::layers {

// One pass's times, in microseconds.
struct PassTimes {
  double total_us = 0, compute_us = 0, comm_us = 0, exposed_us = 0;
  std::vector<double> call_us, call_exposed_us;  // per collective call, in order
};

// Intervals [start, end] on one time axis.
using Intervals = std::vector<std::pair<double, double>>;
// Their union, sorted and disjoint.
Intervals union_of(Intervals v);
double length_of(const Intervals& disjoint);
// The length of [a, b] outside the disjoint intervals `cover`.
double uncovered(double a, double b, const Intervals& cover);

class Timeline {
 public:
  explicit Timeline(Engine& engine) : engine_(engine) {}
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void begin();                               // compute stream: the pass starts
  Engine::Event pause();                      // compute stream: a stretch ends (returned:
                                              // what a collective's stream waits for)
  void resume();                              // compute stream: the next stretch begins
  void comm_start(Engine::Stream s);          // a collective starts on its stream
  Engine::Event comm_end(Engine::Stream s);   // it ends (returned: what compute waits for)
  void end();                                 // compute stream: the pass ends
  // After the compute stream is synchronised (it waited for every call).
  PassTimes read();

 private:
  Engine::Event next();

  Engine& engine_;
  std::vector<Engine::Event> pool_;  // reused pass after pass
  std::size_t used_ = 0;
  Engine::Event begin_ = nullptr, end_ = nullptr;
  std::vector<Engine::Event> marks_;  // compute stream: pause, resume, pause, resume, ...
  std::vector<std::pair<Engine::Event, Engine::Event>> calls_;
};

}  // namespace collscope::layers
