// Open MPI's fixed trees (coll_base_topo.c), restated for the closed forms from their
// definitions, apart from patterns/static_tree.hpp: on virtual ranks v = (r - root) mod N
// (the root is 0), each tree is its parent function; a rank's children are the ranks
// whose parent it is.
//
//   kary (fanout k): levels of 1, k, k^2, ... ranks in order; v on level L > 0 has the
//     parent v - j k^(L-1) for the j >= 1 that lands on level L-1 (its siblings sit
//     k^(L-1) apart).
//   strided binomial: v less its highest set bit.
//   knomial (radix k): v with its lowest nonzero base-k digit cleared.
//   chain: v - 1.   star: 0.
#pragma once

#include <vector>

#include "common.hpp"

namespace collscope::theory::detail {

enum class Shape { kary, strided_binomial, knomial, chain, star };

struct OmpiTree {
  Shape shape;
  int n, root, k = 2;

  int virtual_of(int r) const { return wrap(r - root, n); }
  int real_of(int v) const { return (v + root) % n; }

  int parent(int v) const {
    if (v == 0) return -1;
    switch (shape) {
      case Shape::kary: return kary_parent(v);
      case Shape::strided_binomial: return v - pow2_at_most(v);
      case Shape::knomial: {
        int place = 1;
        while (v % (place * k) == 0) place *= k;  // the lowest nonzero digit's place
        return v - v % (place * k);
      }
      case Shape::chain: return v - 1;
      case Shape::star: return 0;
    }
    return -1;
  }
  std::vector<int> children(int v) const {
    std::vector<int> out;
    for (int c = 1; c < n; ++c)
      if (parent(c) == v) out.push_back(c);
    return out;
  }

 private:
  // Level L holds ranks [first(L), first(L) + k^L), first(L) = 1 + k + ... + k^(L-1).
  int kary_parent(int v) const {
    int first = 1, size = k;
    while (v >= first + size) {
      first += size;
      size *= k;
    }
    const int step = size / k;  // k^(L-1): the stride between siblings
    int p = v - step;
    while (p >= first) p -= step;
    return p;
  }
};

}  // namespace collscope::theory::detail
