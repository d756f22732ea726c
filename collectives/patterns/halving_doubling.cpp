#include "collscope/patterns/halving_doubling.hpp"

#include <algorithm>

namespace collscope::patterns {

int largest_pof2_at_most(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

HdLayout hd_layout(int nranks, int rank) {
  HdLayout l;
  l.pof2 = largest_pof2_at_most(nranks);
  l.rem = nranks - l.pof2;
  if (rank < 2 * l.rem) {
    const bool even = rank % 2 == 0;
    l.role = even ? FoldRole::sender : FoldRole::absorber;
    l.fold_peer = even ? rank + 1 : rank - 1;
    l.vrank = even ? -1 : rank / 2;
  } else {
    l.vrank = rank - l.rem;
  }
  return l;
}

int hd_real_rank(int nranks, int vrank) {
  const int rem = nranks - largest_pof2_at_most(nranks);
  return vrank < rem ? 2 * vrank + 1 : vrank + rem;
}

std::vector<HdStep> hd_reduce_scatter_steps(int nranks, int vrank) {
  const int pof2 = largest_pof2_at_most(nranks);
  std::vector<HdStep> steps;
  int first = 0, len = pof2;
  for (int d = pof2 / 2; d >= 1; d /= 2) {
    const int half = len / 2;
    const bool keep_low = (vrank & d) == 0;
    HdStep s;
    s.peer = hd_real_rank(nranks, vrank ^ d);
    s.recv_first = keep_low ? first : first + half;
    s.send_first = keep_low ? first + half : first;
    s.send_len = s.recv_len = half;
    steps.push_back(s);
    first = s.recv_first;
    len = half;
  }
  return steps;
}

// The halving steps run backwards with send and receive swapped: at distance d a rank
// sends everything it holds and receives the partner's adjacent range of equal size.
std::vector<HdStep> hd_allgather_steps(int nranks, int vrank) {
  std::vector<HdStep> steps = hd_reduce_scatter_steps(nranks, vrank);
  std::reverse(steps.begin(), steps.end());
  for (HdStep& s : steps) {
    std::swap(s.send_first, s.recv_first);
    std::swap(s.send_len, s.recv_len);
  }
  return steps;
}

}  // namespace collscope::patterns
