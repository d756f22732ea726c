#include "collscope/patterns/tournament.hpp"

#include <algorithm>

namespace collscope::patterns {

std::vector<std::vector<RankPair>> tournament_rounds(int n) {
  const int m = n % 2 == 0 ? n : n + 1;
  std::vector<std::vector<RankPair>> rounds;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<RankPair> round;
    for (int i = 0; i < m / 2; ++i) {
      const int a = i == 0 ? m - 1 : (r + i) % (m - 1);
      const int b = (r + m - 1 - i) % (m - 1);
      if (a < n && b < n) round.push_back({std::min(a, b), std::max(a, b)});
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

}  // namespace collscope::patterns
