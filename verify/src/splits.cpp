#include "collscope/verify/splits.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>

#include "collscope/enum_names.hpp"
#include "collscope/errors.hpp"
#include "collscope/patterns/block.hpp"
#include "collscope/splitmix.hpp"

namespace collscope::verify {
namespace {

// No row of a split file may exceed this many elements (a typo guard: 2^40).
constexpr std::uint64_t kMaxRowElements = std::uint64_t{1} << 40;

__extension__ using u128 = unsigned __int128;  // weight x total needs more than 64 bits

// Cuts `total` into parts proportional to `weights` (exact total, no part lost).
void cut_by_weights(std::uint64_t* row, const std::vector<std::uint64_t>& weights,
                    std::uint64_t total) {
  const std::uint64_t sum = std::accumulate(weights.begin(), weights.end(), std::uint64_t{0});
  u128 before = 0;
  for (std::size_t j = 0; j < weights.size(); ++j) {
    const u128 after = before + weights[j];
    row[j] = static_cast<std::uint64_t>(after * total / sum - before * total / sum);
    before = after;
  }
}

std::vector<int> hot_destinations(int n, std::uint64_t seed) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int i = n - 1; i > 0; --i)  // Fisher-Yates with the seed
    std::swap(order[i], order[splitmix64(seed ^ static_cast<std::uint64_t>(i)) % (i + 1)]);
  order.resize(static_cast<std::size_t>(std::max(1, n / 4)));
  return order;
}

}  // namespace

constexpr std::string_view kSplitPatternNames[] = {"uniform", "random", "skewed"};  // in the enum's order

std::optional<SplitPattern> parse_split_pattern(std::string_view name) {
  return by_name<SplitPattern>(name, kSplitPatternNames);
}

std::string_view split_pattern_name(SplitPattern p) { return name_of(p, kSplitPatternNames); }

std::vector<std::uint64_t> make_splits(SplitPattern p, std::uint64_t per_rank, int n,
                                       std::uint64_t seed) {
  const std::size_t nn = static_cast<std::size_t>(n);
  std::vector<std::uint64_t> m(nn * nn);
  const std::vector<int> hot = hot_destinations(n, seed);
  for (std::size_t i = 0; i < nn; ++i) {
    std::vector<std::uint64_t> w(nn, 1);
    if (p == SplitPattern::random)
      for (std::size_t j = 0; j < nn; ++j) w[j] = splitmix64(seed ^ splitmix64(i * nn + j)) % 1024;
    if (p == SplitPattern::skewed) {
      // 80% to the hot ones, 20% to the rest: weights 4*(N-h) and h per destination.
      const std::uint64_t h = hot.size(), cold = nn - h;
      for (std::size_t j = 0; j < nn; ++j) w[j] = cold == 0 ? 1 : h;
      for (int j : hot) w[static_cast<std::size_t>(j)] = cold == 0 ? 1 : 4 * cold;
    }
    if (p == SplitPattern::uniform || std::all_of(w.begin(), w.end(), [](auto x) { return x == 0; }))
      for (std::size_t j = 0; j < nn; ++j)
        m[i * nn + j] = patterns::block_of(per_rank, n, static_cast<int>(j)).count;
    else
      cut_by_weights(&m[i * nn], w, per_rank);
  }
  return m;
}

std::vector<std::uint64_t> read_splits_file(const std::string& path, int n) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read split file '" + path + "'");
  const std::string where = "split file '" + path + "'";
  std::vector<std::uint64_t> m;
  std::string line;
  int rows = 0, line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::vector<std::uint64_t> row;
    std::uint64_t row_sum = 0;
    for (std::string w; words >> w;) {
      if (w.find_first_not_of("0123456789") != std::string::npos || w.size() > 15)
        throw UsageError(where + " line " + std::to_string(line_no) + ": '" + w +
                         "' is not a non-negative integer below 10^15");
      row.push_back(std::stoull(w));
      row_sum += row.back();
    }
    if (row.empty()) continue;
    if (static_cast<int>(row.size()) != n)
      throw UsageError(where + " line " + std::to_string(line_no) + " has " +
                       std::to_string(row.size()) + " entries; " + std::to_string(n) +
                       " ranks need " + std::to_string(n));
    if (row_sum > kMaxRowElements)
      throw UsageError(where + " line " + std::to_string(line_no) + " sends " +
                       std::to_string(row_sum) + " elements, more than 2^40");
    m.insert(m.end(), row.begin(), row.end());
    ++rows;
  }
  if (rows != n)
    throw UsageError(where + " has " + std::to_string(rows) + " rows; " + std::to_string(n) +
                     " ranks need a " + std::to_string(n) + " x " + std::to_string(n) +
                     " matrix");
  return m;
}

}  // namespace collscope::verify
