#include "collscope/patterns/static_tree.hpp"

#include <algorithm>

#include "collscope/patterns/binomial.hpp"

namespace collscope::patterns {
namespace {

// k^level.
int power(int k, int level) {
  int p = 1;
  for (int i = 0; i < level; ++i) p *= k;
  return p;
}

// The kary tree's level of v: level L holds k^L ranks, after the levels above it.
int kary_level(int k, int v) {
  int level = 0;
  for (int first_of_next = 1; first_of_next <= v; first_of_next += power(k, ++level)) {
  }
  return level;
}

// Ranks on the levels above `level`: 1 + k + ... + k^(level-1).
int kary_above(int k, int level) {
  int n = 0;
  for (int l = 0; l < level; ++l) n += power(k, l);
  return n;
}

int kary_parent(int k, int v) {
  if (v == 0) return -1;
  const int level = kary_level(k, v), step = power(k, level - 1), first = kary_above(k, level);
  int p = v;
  while (p >= first) p -= step;  // back over the siblings to the parent's level
  return p;
}

// The smallest power of two above v (v's place in the strided binomial tree).
int pow2_above(int v) {
  int m = 1;
  while (m <= v) m *= 2;
  return m;
}

int knomial_parent(int k, int n, int v) {
  for (int mask = 1; mask < n; mask *= k)
    if (v % (k * mask) != 0) return v / (k * mask) * (k * mask);
  return -1;
}

std::vector<int> knomial_children(int k, int n, int v) {
  int mask = 1;
  while (mask < n && v % (k * mask) == 0) mask *= k;  // v's lowest nonzero digit, or past N
  std::vector<int> out;
  for (mask /= k; mask > 0; mask /= k)
    for (int i = 1; i < k; ++i)
      if (v + mask * i < n) out.push_back(v + mask * i);
  return out;
}

}  // namespace

int StaticTree::parent(int v) const {
  if (v == 0) return -1;
  switch (shape) {
    case TreeShape::kary: return kary_parent(fanout, v);
    case TreeShape::strided_binomial: return v - pow2_above(v) / 2;
    case TreeShape::knomial: return knomial_parent(fanout, nranks, v);
    case TreeShape::chain: return v - 1;
    case TreeShape::star: return 0;
    case TreeShape::binomial: return binomial_parent(nranks, v);
  }
  return -1;
}

std::vector<int> StaticTree::children(int v) const {
  std::vector<int> out;
  switch (shape) {
    case TreeShape::kary: {
      const int step = power(fanout, kary_level(fanout, v));
      for (int i = 1; i <= fanout && v + i * step < nranks; ++i) out.push_back(v + i * step);
      break;
    }
    case TreeShape::strided_binomial:
      for (int m = pow2_above(v); v + m < nranks; m *= 2) out.push_back(v + m);
      break;
    case TreeShape::knomial: return knomial_children(fanout, nranks, v);
    case TreeShape::chain:
      if (v + 1 < nranks) out.push_back(v + 1);
      break;
    case TreeShape::star:
      if (v == 0)
        for (int c = 1; c < nranks; ++c) out.push_back(c);
      break;
    case TreeShape::binomial: return binomial_children(nranks, v);
  }
  return out;
}

int StaticTree::depth(int v) const {
  int d = 0;
  for (int p = parent(v); p >= 0; p = parent(p)) ++d;
  return d;
}

// Every shape numbers a parent below its children (parent(v) < v), so one pass in rank
// order finds every depth: O(N), where a depth() per rank would be O(N^2) on a chain
// (the schedules ask for the height on every rank).
int StaticTree::height() const {
  std::vector<int> d(static_cast<std::size_t>(std::max(nranks, 1)), 0);
  int h = 0;
  for (int v = 1; v < nranks; ++v) {
    d[static_cast<std::size_t>(v)] = d[static_cast<std::size_t>(parent(v))] + 1;
    h = std::max(h, d[static_cast<std::size_t>(v)]);
  }
  return h;
}

}  // namespace collscope::patterns
