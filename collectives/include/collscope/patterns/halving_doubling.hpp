// Recursive halving / recursive doubling (Rabenseifner) with the fold for N that is not
// a power of two, as pure functions.
//
// Fold: p = largest power of two <= N, rem = N - p. Among ranks 0..2*rem-1 every even
// rank hands its whole vector to the odd rank above it and sits out; the odd rank takes
// virtual rank r/2. Ranks from 2*rem on take virtual rank r - rem. The p virtual ranks
// then run
//   reduce-scatter by recursive halving: distance d = p/2, p/4, ..., 1; partner v^d;
//     each keeps the half of its current block range on its own side of d and sends
//     the other half; after log2 p steps virtual rank v owns block v (of p blocks);
//   allgather by recursive doubling: the same steps in reverse, ranges doubling.
// Finally every odd rank below 2*rem sends the result back to its even partner.
#pragma once

#include <vector>

namespace collscope::patterns {

enum class FoldRole { none, sender, absorber };  // sender: sits out; absorber: r+1 of it

struct HdLayout {
  int pof2 = 1;
  int rem = 0;
  int vrank = -1;  // -1 while folded out
  FoldRole role = FoldRole::none;
  int fold_peer = -1;  // the partner in the fold, if any
};

struct HdStep {
  int peer = -1;       // real rank
  int send_first = 0;  // block range sent, in blocks of pof2
  int send_len = 0;
  int recv_first = 0;  // block range received
  int recv_len = 0;
};

int largest_pof2_at_most(int n);
HdLayout hd_layout(int nranks, int rank);
int hd_real_rank(int nranks, int vrank);
// Steps of the reduce-scatter (halving) and allgather (doubling) for a virtual rank.
std::vector<HdStep> hd_reduce_scatter_steps(int nranks, int vrank);
std::vector<HdStep> hd_allgather_steps(int nranks, int vrank);

}  // namespace collscope::patterns
