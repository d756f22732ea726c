// --timeout: a thread that watches progress() and, when one call has run longer than
// the limit, prints where this rank is stuck (collective, algorithm, phase, step, the
// peer it waits for) on one line and exits with code 3; mpirun then ends the job.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace collscope::program {

class Watchdog {
 public:
  Watchdog(double timeout_s, int rank, std::string program);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void loop();
  double timeout_s_;
  int rank_;
  std::string program_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Marks a harness section (barrier, timing exchange) as a watched call.
class WatchedSection {
 public:
  explicit WatchedSection(const char* what);
  ~WatchedSection();
};

}  // namespace collscope::program
