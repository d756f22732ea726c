#include "collscope/layers/framework/groups.hpp"

#include <array>

namespace collscope::layers {
namespace {

// A layout: the sizes of its four coordinates, fastest varying first.
struct Layout {
  std::array<int, 4> sizes;
  int axis = 0;  // the coordinate the group varies
};

Layout layout_of(const ParallelConfig& c, GroupKind k) {
  const std::array<int, 4> dense{c.tp, c.cp, c.dp(), c.pp};
  const std::array<int, 4> expert{c.etp, c.ep, c.edp(), c.pp};
  switch (k) {
    case GroupKind::tp: return {dense, 0};
    case GroupKind::cp: return {dense, 1};
    case GroupKind::dp: return {dense, 2};
    case GroupKind::pp: return {dense, 3};
    case GroupKind::etp: return {expert, 0};
    case GroupKind::ep: return {expert, 1};
    case GroupKind::edp: return {expert, 2};
  }
  return {dense, 0};
}

std::array<int, 4> coordinates(const Layout& l, int rank) {
  std::array<int, 4> x{};
  for (int i = 0; i < 4; ++i) {
    x[i] = rank % l.sizes[i];
    rank /= l.sizes[i];
  }
  return x;
}

int rank_of(const Layout& l, const std::array<int, 4>& x) {
  int rank = 0;
  for (int i = 3; i >= 0; --i) rank = rank * l.sizes[i] + x[i];
  return rank;
}

// The group's number: the other three coordinates as a mixed-radix number, in the same
// order, so groups are numbered by their first rank.
int group_index(const Layout& l, const std::array<int, 4>& x) {
  int index = 0;
  for (int i = 3; i >= 0; --i)
    if (i != l.axis) index = index * l.sizes[i] + x[i];
  return index;
}

std::string text(std::int64_t v) { return std::to_string(v); }

std::optional<std::string> not_divisible(const char* what, std::optional<std::int64_t> value,
                                         const char* degree, int divisor,
                                         const char* why = "") {
  if (!value || *value % divisor == 0) return std::nullopt;
  return std::string(what) + " " + text(*value) + " is not divisible by " + degree + " " +
         text(divisor) + why;
}

std::optional<std::string> degree_violation(const ParallelConfig& c) {
  const std::pair<const char*, int> degrees[] = {
      {"TP", c.tp}, {"CP", c.cp}, {"PP", c.pp}, {"EP", c.ep}, {"ETP", c.etp}};
  if (c.world < 1) return "world size must be at least 1, got " + text(c.world);
  for (const auto& [name, value] : degrees)
    if (value < 1) return std::string(name) + " must be at least 1, got " + text(value);
  return std::nullopt;
}

std::optional<std::string> world_violation(const ParallelConfig& c) {
  const int dense = c.tp * c.cp * c.pp, expert = c.etp * c.ep * c.pp;
  if (c.world % dense != 0)
    return "world size " + text(c.world) + " is not divisible by TP x CP x PP = " +
           text(dense) + " (TP " + text(c.tp) + ", CP " + text(c.cp) + ", PP " + text(c.pp) +
           ")";
  if (c.world % expert != 0)
    return "world size " + text(c.world) + " is not divisible by ETP x EP x PP = " +
           text(expert) + " (ETP " + text(c.etp) + ", EP " + text(c.ep) + ", PP " +
           text(c.pp) + ")";
  return std::nullopt;
}

}  // namespace

std::string_view group_name(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::cp: return "cp";
    case GroupKind::dp: return "dp";
    case GroupKind::pp: return "pp";
    case GroupKind::ep: return "ep";
    case GroupKind::etp: return "etp";
    case GroupKind::edp: return "edp";
  }
  return "?";
}

std::optional<std::string> config_violation(const ParallelConfig& c, const ModelDims& d) {
  if (auto why = degree_violation(c)) return why;
  if (auto why = world_violation(c)) return why;
  const std::optional<std::string> checks[] = {
      not_divisible("number of attention heads", d.heads, "TP", c.tp),
      not_divisible("number of experts", d.experts, "EP", c.ep),
      d.sp ? not_divisible("sequence length", d.sequence, "TP", c.tp, " (sequence parallelism)")
           : std::nullopt,
      not_divisible("vocabulary size", d.vocab, "TP", c.tp),
      not_divisible("FFN size", d.ffn, "TP", c.tp),
      not_divisible("output features", d.out_features, "TP", c.tp),
  };
  for (const auto& why : checks)
    if (why) return why;
  return std::nullopt;
}

int group_size(const ParallelConfig& c, GroupKind k) {
  const Layout l = layout_of(c, k);
  return l.sizes[l.axis];
}

GroupPosition group_of(const ParallelConfig& c, GroupKind k, int world_rank) {
  const Layout l = layout_of(c, k);
  std::array<int, 4> x = coordinates(l, world_rank);
  GroupPosition g{group_index(l, x), x[l.axis], {}};
  for (int i = 0; i < l.sizes[l.axis]; ++i) {
    x[l.axis] = i;
    g.members.push_back(rank_of(l, x));
  }
  return g;
}

std::vector<std::vector<int>> rank_groups(const ParallelConfig& c, GroupKind k) {
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(c.world / group_size(c, k)));
  for (int r = 0; r < c.world; ++r) {
    GroupPosition g = group_of(c, k, r);
    if (g.position == 0) groups[static_cast<std::size_t>(g.index)] = std::move(g.members);
  }
  return groups;
}

}  // namespace collscope::layers
