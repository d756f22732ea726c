// The one grammar of a size on every command line: decimal digits, then an optional unit
// in any case: b; k, kb, kib; m, mb, mib; g, gb, gib; t, tb, tib. Every unit is a binary
// multiple (1K = 1KB = 1KiB = 1024 B), as nccl-tests' -b/-e read them. Nothing else: no
// sign, no space, no fraction. collectives/core/size_grammar.tsv lists accepted and
// refused strings; the C++ and the Python tests (scripts/collscope/sizes.py) both read it.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

namespace collscope {

enum class SizeRefusal {
  malformed,  // not digits + unit
  signed_,    // starts with '-' or '+' (some front ends say so apart)
  too_large,  // does not fit in 64 bits
};

// The bytes `text` names, or why it names none.
std::variant<std::uint64_t, SizeRefusal> parse_size_text(std::string_view text);

}  // namespace collscope
