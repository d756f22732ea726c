// Rank groups of a parallel layout, as Megatron-LM lays them out (parallel_state.py,
// RankGenerator). Pure arithmetic: no MPI, so it is unit-tested without launching ranks.
//
// Dense layers: order tp-cp-ep-dp-pp with ep = 1 (Megatron's decoder generator), TP
// varying fastest. A rank is a mixed-radix number
//
//   rank = tp + TP * (cp + CP * (dp + DP * pp)),     DP = world / (TP x CP x PP)
//
// Expert layers: order etp-ep-edp-pp (Megatron's expert generator: tp = ETP, cp = 1):
//
//   rank = etp + ETP * (ep + EP * (edp + EDP * pp)),  EDP = world / (ETP x EP x PP)
//
// A group of one dimension is the set of ranks that differ only in that coordinate.
// Worked case (world 16, TP 2, PP 2, EP 4, ETP 1): TP [0,1] [2,3] ..., DP [0,2,4,6]
// [1,3,5,7] [8,10,12,14] ..., PP [0,8] [1,9] ..., EP [0-3] [4-7] ..., EDP [0,4] [1,5] ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::layers {

enum class GroupKind { tp, cp, dp, pp, ep, etp, edp };

std::string_view group_name(GroupKind k);  // "tp", "cp", "dp", "pp", "ep", "etp", "edp"

struct ParallelConfig {
  int world = 1;
  int tp = 1, cp = 1, pp = 1;  // dense
  int ep = 1, etp = 1;         // experts
  // Derived; valid only once config_violation() found nothing.
  int dp() const { return world / (tp * cp * pp); }
  int edp() const { return world / (etp * ep * pp); }
};

// The sizes of a layer that must divide by a parallel degree; unset ones are not checked.
struct ModelDims {
  std::optional<std::int64_t> heads = std::nullopt;         // attention heads, by TP
  std::optional<std::int64_t> experts = std::nullopt;       // MoE experts, by EP
  std::optional<std::int64_t> sequence = std::nullopt;      // sequence length, by TP when sp
  bool sp = false;                                          // sequence parallelism
  std::optional<std::int64_t> vocab = std::nullopt;         // vocabulary, by TP
  std::optional<std::int64_t> ffn = std::nullopt;           // FFN (MLP hidden) size, by TP
  std::optional<std::int64_t> out_features = std::nullopt;  // column-parallel outputs, by TP
};

// The first constraint the layout breaks, as one line naming it, e.g.
// "world size 6 is not divisible by TP x CP x PP = 4 (TP 2, CP 1, PP 2)";
// nullopt when every constraint holds. Checks, in order: degrees >= 1, world by
// TP x CP x PP, world by ETP x EP x PP, heads by TP, experts by EP, sequence by TP under
// SP, vocab by TP, FFN by TP, output features by TP.
std::optional<std::string> config_violation(const ParallelConfig& c, const ModelDims& d = {});

// Where one rank sits in its group of a kind.
struct GroupPosition {
  int index = 0;             // which group of this kind (0 .. number of groups - 1)
  int position = 0;          // the rank's place inside it (its rank in the group comm)
  std::vector<int> members;  // world ranks, in group-rank order
  // As sizes, for the arithmetic of shards: the rank's place, the group's size.
  std::size_t place() const { return static_cast<std::size_t>(position); }
  std::size_t size() const { return members.size(); }
};

// Every group of a kind, each in group-rank order; groups ordered by their first rank.
std::vector<std::vector<int>> rank_groups(const ParallelConfig& c, GroupKind k);
GroupPosition group_of(const ParallelConfig& c, GroupKind k, int world_rank);
int group_size(const ParallelConfig& c, GroupKind k);

}  // namespace collscope::layers
