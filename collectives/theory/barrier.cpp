// Exact volume of each barrier algorithm: messages one rank sends and receives in one
// call, for any N. A barrier moves no bytes: its messages are zero-byte signals, which
// are sent and counted (RankVolume::signal_sent / signal_received).
#include "collscope/barrier.hpp"
#include "collscope/patterns/dissemination.hpp"

namespace collscope {

// One signal out and one in per round: ceil(log2 N) each way, 0 bytes.
RankVolume barrier_dissemination_theory(int, int n, const CollArgs&) {
  RankVolume v;
  for (int k = 0; k < patterns::dissemination_rounds(n); ++k) {
    v.signal_sent();
    v.signal_received();
  }
  return v;
}

}  // namespace collscope
