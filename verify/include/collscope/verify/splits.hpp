// Split matrices for all-to-all-v: how many elements rank i sends to rank j (N x N,
// row = sender). Generated from a seed (identical on every rank) or read from a file.
//
//   uniform  every row is `per_rank` elements in N blocks by the uneven rule
//   random   every row is `per_rank` elements cut at seeded random points
//   skewed   MoE-like: a few hot destinations (N/4, at least one, chosen by the seed,
//            the same for every row) take 80% of each row, the others share the rest
//   file     N lines of N non-negative integers (elements); '#' starts a comment
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collscope::verify {

enum class SplitPattern { uniform, random, skewed };

std::optional<SplitPattern> parse_split_pattern(std::string_view name);
std::string_view split_pattern_name(SplitPattern p);

std::vector<std::uint64_t> make_splits(SplitPattern p, std::uint64_t per_rank, int nranks,
                                       std::uint64_t seed);

// Throws UsageError naming the file and the problem: missing, unreadable, not N x N,
// not a non-negative integer, a row too large.
std::vector<std::uint64_t> read_splits_file(const std::string& path, int nranks);

}  // namespace collscope::verify
