// The textbook closed forms (docs/textbook-formulas.md) for the bytes one rank moves in
// one call, written as they are usually written: no uneven blocks, no per-rank
// differences, and their known simplifications kept (the docs say by how much each is
// off). Most count what a rank sends; the tree, the double binary tree and the full mesh
// are usually quoted as sends plus receives per worker, and their `source` says so.
#include "collscope/textbook_formulas.hpp"

#include <cmath>

#include "collscope/collective.hpp"

namespace collscope {
namespace {

double ring_allreduce(int n, double d) { return 2.0 * (n - 1) / n * d; }
double full_mesh(int n, double d) { return 2.0 * (n - 1) * d; }
double tree(int, double d) { return 2.0 * d; }
double double_tree(int, double d) { return d; }
double one_pass(int n, double d) { return static_cast<double>(n - 1) / n * d; }
double bruck_alltoall(int n, double d) { return std::ceil(std::log2(n)) * d / 2.0; }

constexpr std::string_view kRingAllreduce =
    "Patarasuk & Yuan 2009: a rank sends 2(N-1)/N x D "
    "(docs/textbook-formulas.md#allreduce-ring)";
constexpr std::string_view kFullMesh =
    "full-mesh reduce + broadcast: 2(N-1) x D sent plus received per rank "
    "(docs/textbook-formulas.md#allreduce-direct)";
constexpr std::string_view kTree =
    "binary-tree reduce + broadcast: 2 x D per worker, a leaf's send plus receive; inner "
    "nodes move more (docs/textbook-formulas.md#allreduce-tree)";
constexpr std::string_view kDoubleTree =
    "Sanders, Speck & Traeff 2009 two-tree: D per rank, each tree carrying D/2 "
    "(docs/textbook-formulas.md#allreduce-dbt)";
constexpr std::string_view kHalvingDoubling =
    "Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005: 2(N-1)/N x D "
    "(docs/textbook-formulas.md#allreduce-halving-doubling)";
constexpr std::string_view kReduceScatter =
    "Thakur, Rabenseifner & Gropp 2005: (N-1)/N x D "
    "(docs/textbook-formulas.md#reduce-scatter)";
constexpr std::string_view kAllgather =
    "Thakur, Rabenseifner & Gropp 2005: (N-1)/N x D (docs/textbook-formulas.md#allgather)";
constexpr std::string_view kPairwise =
    "pairwise exchange: (N-1) x D/N sent (docs/textbook-formulas.md#alltoall-pairwise)";
constexpr std::string_view kRingAlltoall =
    "ring all-to-all: D/N per round, N-1 rounds (docs/textbook-formulas.md#alltoall-ring)";
constexpr std::string_view kBruckAlltoall =
    "Bruck et al. 1997: D/2 per round, ceil(log2 N) rounds "
    "(docs/textbook-formulas.md#alltoall-bruck)";
constexpr std::string_view kScatter =
    "linear scatter: the root sends (N-1)/N x D (docs/textbook-formulas.md#scatter)";

constexpr TextbookFormula kFormulas[] = {
    {"allreduce", "ring", "2(N-1)/N x D", kRingAllreduce, ring_allreduce},
    {"allreduce", "direct", "2(N-1) x D", kFullMesh, full_mesh},
    {"allreduce", "tree", "2 x D", kTree, tree},
    {"allreduce", "dbt", "D", kDoubleTree, double_tree},
    {"allreduce", "halving_doubling", "2(N-1)/N x D", kHalvingDoubling, ring_allreduce},
    {"reduce_scatter", "ring", "(N-1)/N x D", kReduceScatter, one_pass},
    {"reduce_scatter", "halving", "(N-1)/N x D", kReduceScatter, one_pass},
    {"allgather", "ring", "(N-1)/N x D", kAllgather, one_pass},
    {"allgather", "recursive_doubling", "(N-1)/N x D", kAllgather, one_pass},
    {"allgather", "bruck", "(N-1)/N x D", kAllgather, one_pass},
    {"alltoall", "pairwise", "(N-1)/N x D", kPairwise, one_pass},
    {"alltoall", "ring", "(N-1)/N x D", kRingAlltoall, one_pass},
    {"alltoall", "bruck", "ceil(log2 N) x D/2", kBruckAlltoall, bruck_alltoall},
    {"scatter", "linear", "(N-1)/N x D (root)", kScatter, one_pass},
    {"scatter", "binomial", "(N-1)/N x D (root)", kScatter, one_pass},
};

}  // namespace

std::span<const TextbookFormula> all_textbook_formulas() { return kFormulas; }

const TextbookFormula* find_textbook_formula(std::string_view collective,
                                             std::string_view algorithm) {
  for (const TextbookFormula& f : kFormulas)
    if (f.collective == collective && f.algorithm == algorithm) return &f;
  return nullptr;
}

std::optional<double> textbook_sent_bytes(std::string_view collective, std::string_view algorithm,
                                          int nranks, const CollArgs& args) {
  const TextbookFormula* f = find_textbook_formula(collective, algorithm);
  const CollectiveInfo* info = find_collective(collective);
  if (!f || !info || nranks < 1) return std::nullopt;
  return f->sent_bytes(nranks, static_cast<double>(info->reported_bytes(args, nranks)));
}

std::optional<std::string_view> textbook_formula_text(std::string_view collective,
                                                      std::string_view algorithm) {
  const TextbookFormula* f = find_textbook_formula(collective, algorithm);
  if (!f) return std::nullopt;
  return f->text;
}

}  // namespace collscope
