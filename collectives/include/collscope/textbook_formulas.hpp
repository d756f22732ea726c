// The textbook closed forms for the bytes one rank sends in one call, beside the exact
// theory (collectives/theory/), so a report can show the textbook formula, the exact
// theory and the measurement side by side. D is the size column
// (CollectiveInfo::reported_bytes), N the number of ranks. Each formula says where it
// comes from and where docs/textbook-formulas.md explains it and how far it is off.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "collscope/coll_args.hpp"

namespace collscope {

struct TextbookFormula {
  std::string_view collective;  // "allreduce"
  std::string_view algorithm;   // "ring"
  std::string_view text;        // "2(N-1)/N x D"
  std::string_view source;      // its public source and its section of the docs
  double (*sent_bytes)(int nranks, double D) = nullptr;
};

std::span<const TextbookFormula> all_textbook_formulas();
const TextbookFormula* find_textbook_formula(std::string_view collective, std::string_view algorithm);

// The formula's bytes per rank for this call (D taken from the call), or nullopt.
std::optional<double> textbook_sent_bytes(std::string_view collective, std::string_view algorithm,
                                          int nranks, const CollArgs& args);
// The formula's text, or nullopt.
std::optional<std::string_view> textbook_formula_text(std::string_view collective,
                                                      std::string_view algorithm);

}  // namespace collscope
