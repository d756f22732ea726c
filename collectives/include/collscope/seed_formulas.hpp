// The seeds' closed forms for the bytes one rank sends in one call, beside the exact
// theory (collectives/theory/), so a report can show seed formula, exact theory and
// measurement side by side. D is the size column (CollectiveInfo::reported_bytes), N the
// number of ranks. Where seed 004 gives no figure for an algorithm there is none here.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "collscope/comm.hpp"

namespace collscope {

struct SeedFormula {
  std::string_view collective;  // "allreduce"
  std::string_view algorithm;   // "ring"
  std::string_view text;        // "2(N-1)/N x D"
  std::string_view source;      // where the seed says it, and what it counts
  double (*sent_bytes)(int nranks, double D) = nullptr;
};

std::span<const SeedFormula> all_seed_formulas();
const SeedFormula* find_seed_formula(std::string_view collective, std::string_view algorithm);

// The seed's bytes per rank for this call (D taken from the call), or nullopt.
std::optional<double> seed_sent_bytes(std::string_view collective, std::string_view algorithm,
                                      int nranks, const CollArgs& args);
// The formula's text, or nullopt.
std::optional<std::string_view> seed_formula_text(std::string_view collective,
                                                  std::string_view algorithm);

}  // namespace collscope
