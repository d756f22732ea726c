// Seed 004's closed forms (chapter 4, 第2条, 第6条, 第7条) for the bytes one rank moves
// in one call, written as the seed writes them: no uneven blocks, no per-rank
// differences, and the seed's own mistakes kept (README "Where the seeds are wrong").
// The seed's figure is its per-node "commsize", the numerator of its time formula. It
// counts sends only for the ring, halving-doubling and the catalogue primitives, but
// sends plus receives for the tree, the double binary tree and the full mesh; the
// `source` of each entry says which.
#include "collscope/seed_formulas.hpp"

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
    "seed 004 第6条 2) Ring AllReduce: commsize = 2(N-1)/N x datasize, what a node sends";
constexpr std::string_view kFullMesh =
    "seed 004 第6条 3) ReduceBroadcast (Full-Mesh): commsize = 2(N-1) x datasize, sends plus "
    "receives (the seed says a node sends (N-1) x datasize)";
constexpr std::string_view kTree =
    "seed 004 第6条 4) Tree AllReduce: commsize_worker = 2 x datasize, a leaf's send plus "
    "receive; inner nodes are not counted";
constexpr std::string_view kDoubleTree =
    "seed 004 第6条 5) Double Binary Tree: commsize_per_node = datasize";
constexpr std::string_view kHalvingDoubling =
    "seed 004 第6条 6) Halving-Doubling: commsize = 2(N-1)/N x datasize";
constexpr std::string_view kReduceScatter =
    "seed 004 第7条 2) TP+SP: ReduceScatter通信量 = (TP-1)/TP x B x S x H x sizeof(dtype)";
constexpr std::string_view kAllgather =
    "seed 004 第7条 2) TP+SP: AllGather通信量 = (TP-1)/TP x B x S x H x sizeof(dtype)";
constexpr std::string_view kPairwise =
    "seed 004 第6条 7a) Pairwise: sends (N-1) x datasize/N";
constexpr std::string_view kRingAlltoall =
    "seed 004 第6条 7b) Ring all-to-all: datasize/N per round, N-1 rounds";
constexpr std::string_view kBruckAlltoall =
    "seed 004 第6条 7c) Bruck: datasize/2 per round, log2 N rounds";
constexpr std::string_view kScatter =
    "seed 004 第7条 5) 15) EP+TP scheme 1 (Scatter): the main device sends "
    "(moe_tp-1)/moe_tp x datasize";

constexpr SeedFormula kFormulas[] = {
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

std::span<const SeedFormula> all_seed_formulas() { return kFormulas; }

const SeedFormula* find_seed_formula(std::string_view collective, std::string_view algorithm) {
  for (const SeedFormula& f : kFormulas)
    if (f.collective == collective && f.algorithm == algorithm) return &f;
  return nullptr;
}

std::optional<double> seed_sent_bytes(std::string_view collective, std::string_view algorithm,
                                      int nranks, const CollArgs& args) {
  const SeedFormula* f = find_seed_formula(collective, algorithm);
  const CollectiveInfo* info = find_collective(collective);
  if (!f || !info || nranks < 1) return std::nullopt;
  return f->sent_bytes(nranks, static_cast<double>(info->reported_bytes(args, nranks)));
}

std::optional<std::string_view> seed_formula_text(std::string_view collective,
                                                  std::string_view algorithm) {
  const SeedFormula* f = find_seed_formula(collective, algorithm);
  if (!f) return std::nullopt;
  return f->text;
}

}  // namespace collscope
