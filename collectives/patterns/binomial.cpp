#include "collscope/patterns/binomial.hpp"

namespace collscope::patterns {
namespace {

// The lowest set bit of v; for the root (v = 0), the first power of two >= nranks.
int low_bit(int nranks, int vrank) {
  int bit = 1;
  while (bit < nranks && (bit & vrank) == 0) bit <<= 1;
  return bit;
}

}  // namespace

int binomial_parent(int nranks, int vrank) {
  if (vrank == 0) return -1;
  return vrank - low_bit(nranks, vrank);
}

std::vector<int> binomial_children(int nranks, int vrank) {
  std::vector<int> out;
  for (int m = low_bit(nranks, vrank) >> 1; m > 0; m >>= 1)
    if (vrank + m < nranks) out.push_back(vrank + m);
  return out;
}

RankRun binomial_subtree(int nranks, int vrank) {
  return {vrank, std::min(low_bit(nranks, vrank), nranks - vrank)};
}

std::array<RankRun, 2> real_runs(int nranks, int root, RankRun virt) {
  if (virt.len <= 0) return {RankRun{to_real(virt.first, root, nranks), 0}, RankRun{0, 0}};
  const int first = to_real(virt.first, root, nranks);
  const int head = std::min(virt.len, nranks - first);
  return {RankRun{first, head}, RankRun{0, virt.len - head}};
}

std::size_t virtual_run_elems(std::size_t count, int nranks, int root, RankRun virt) {
  std::size_t total = 0;
  for (const RankRun& run : real_runs(nranks, root, virt))
    total += run_block(count, nranks, run).count;
  return total;
}

std::size_t binomial_staging_elems(std::size_t count, int nranks, int root, int vrank) {
  const std::vector<int> children = binomial_children(nranks, vrank);
  if (vrank != 0) {
    if (children.empty()) return 0;  // a leaf sends or receives its block in place
    return virtual_run_elems(count, nranks, root, binomial_subtree(nranks, vrank));
  }
  for (int c : children)  // children's subtrees are disjoint: at most one holds the wrap
    if (run_wraps(nranks, root, binomial_subtree(nranks, c)))
      return virtual_run_elems(count, nranks, root, binomial_subtree(nranks, c));
  return 0;
}

}  // namespace collscope::patterns
